-- Runs exchanges through deploy/envoy/error-mapper.lua under a standalone Lua (LuaJIT, the VM
-- Envoy embeds), for test/deploy/error-mapper.test.ts. Usage: luajit luajit-driver.lua ROOT < cases
-- Input: per exchange three length-prefixed strings (request headers, response headers, body),
-- each as "<byte length>\n<bytes>". Output: per exchange six length-prefixed strings
-- (responded, headers, body, logs, request headers, the access log's path).
local root = arg[1]
dofile(root .. "/deploy/envoy/error-mapper.lua")
dofile(root .. "/test/deploy/envoy-lua-harness.lua")

local function read_string()
  local line = io.read("*l")
  if line == nil then return nil end
  local n = tonumber(line)
  if n == 0 then return "" end
  return io.read(n)
end

local function write_string(s)
  io.write(#s, "\n", s)
end

while true do
  local req = read_string()
  if req == nil then break end
  local res = read_string()
  local body = read_string()
  local out = run_exchange(req, res, body)
  write_string(out.responded and "true" or "false")
  write_string(out.headers)
  write_string(out.body)
  write_string(out.logs)
  write_string(out.requestHeaders)
  write_string(out.loggedPath)
end
