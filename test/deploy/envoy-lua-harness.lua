-- A stand-in for the parts of Envoy's Lua filter API that deploy/envoy/error-mapper.lua uses
-- (headers(), body(always_wrap), streamInfo():dynamicMetadata(), respond(), logWarn()), so the
-- mapper's own envoy_on_request / envoy_on_response run unchanged under a Lua VM in the tests.
-- Header maps cross the JS boundary as text, "name: value" lines (names lowercased, as in Envoy's
-- header maps); the result is a table of strings.

local function new_headers(text)
  local entries = {}
  for line in text:gmatch("[^\n]+") do
    local name, value = line:match("^(:?[^:]+): ?(.*)$")
    if name then entries[#entries + 1] = { name:lower(), value } end
  end
  local map = {}
  function map:get(name)
    name = name:lower()
    for _, e in ipairs(entries) do if e[1] == name then return e[2] end end
    return nil
  end
  function map:remove(name)
    name = name:lower()
    local kept = {}
    for _, e in ipairs(entries) do if e[1] ~= name then kept[#kept + 1] = e end end
    entries = kept
  end
  function map:replace(name, value)
    name = name:lower()
    for _, e in ipairs(entries) do
      if e[1] == name then e[2] = value; self:remove_after(name, e); return end
    end
    entries[#entries + 1] = { name, value }
  end
  function map:remove_after(name, keep)
    local kept = {}
    for _, e in ipairs(entries) do if e[1] ~= name or e == keep then kept[#kept + 1] = e end end
    entries = kept
  end
  function map:add(name, value) entries[#entries + 1] = { name:lower(), value } end
  function map:serialize()
    local lines = {}
    for _, e in ipairs(entries) do lines[#lines + 1] = e[1] .. ": " .. e[2] end
    return table.concat(lines, "\n")
  end
  return map
end

local function new_buffer(bytes)
  local buffer = {}
  function buffer:length() return #bytes end
  function buffer:getBytes(index, length) return bytes:sub(index + 1, index + length) end
  function buffer:setBytes(value) bytes = value end
  function buffer:bytes() return bytes end
  return buffer
end

local function new_stream_info(store)
  local meta = {}
  function meta:set(namespace, key, value)
    store[namespace] = store[namespace] or {}
    store[namespace][key] = value
  end
  function meta:get(namespace) return store[namespace] end
  local info = {}
  function info:dynamicMetadata() return meta end
  return info
end

local function new_logger(logs)
  local function at(level) return function(_, message) logs[#logs + 1] = level .. ": " .. message end end
  return at("warn"), at("info"), at("err"), at("debug")
end


--- Runs envoy_on_request on the request headers; when it answers, that answer is the result.
--- Otherwise runs envoy_on_response on what the filters after it (transcoder, router) produced:
--- response_headers (with :status) and response_body ("" for a headers-only response).
function run_exchange(request_headers, response_headers, response_body)
  local metadata = {}
  local logs = {}
  local warn, info, err, debug = new_logger(logs)
  local req = new_headers(request_headers)
  local responded = nil
  local request_handle = {
    headers = function() return req end,
    streamInfo = function() return new_stream_info(metadata) end,
    respond = function(_, headers, body)
      -- A Lua table has no order; sorted names make the answer the same under every VM.
      local names = {}
      for k in pairs(headers) do names[#names + 1] = k end
      table.sort(names)
      local h = new_headers("")
      for _, k in ipairs(names) do h:add(k, headers[k]) end
      responded = { headers = h, body = body }
    end,
    logWarn = warn, logInfo = info, logErr = err, logDebug = debug,
  }
  envoy_on_request(request_handle)
  local logged_path = (metadata["envoy.filters.http.lua"] or {}).path or ""
  if responded then
    return { responded = true, headers = responded.headers:serialize(), body = responded.body, logs = table.concat(logs, "\n"), requestHeaders = req:serialize(), loggedPath = logged_path }
  end
  local res = new_headers(response_headers)
  local buffer = new_buffer(response_body)
  local had_body = #response_body > 0
  local response_handle = {
    headers = function() return res end,
    body = function(_, always_wrap)
      if not had_body and not always_wrap then return nil end
      return buffer
    end,
    streamInfo = function() return new_stream_info(metadata) end,
    logWarn = warn, logInfo = info, logErr = err, logDebug = debug,
  }
  envoy_on_response(response_handle)
  return { responded = false, headers = res:serialize(), body = buffer:bytes(), logs = table.concat(logs, "\n"), requestHeaders = req:serialize(), loggedPath = logged_path }
end
