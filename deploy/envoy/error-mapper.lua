-- agentplane's Envoy error mapper (envoy.filters.http.lua, listed BEFORE the gRPC-JSON transcoder
-- in envoy.yaml, so that on the response path it runs AFTER the transcoder).
--
-- It makes Envoy's REST edge answer exactly as the TypeScript edge (services/edge) does:
--   * every error, whoever produced it (a service's gRPC status converted by the transcoder with
--     convert_grpc_status, the transcoder's own rejections, Envoy's local replies), becomes
--     {"title","detail","status","requestId"} with Content-Type: application/json, except on the
--     OTLP/HTTP paths, where it becomes a google.rpc.Status in the request's encoding;
--   * a success carrying the service's `x-http-code` header gets that status (201, 304, ...) and
--     the header is removed;
--   * every response carries X-Request-Id, the client's one when it is 1-200 visible ASCII
--     characters, else a fresh UUID;
--   * requests the TypeScript edge refuses before routing are refused the same way here: raw
--     gRPC (the edge speaks REST/JSON only) and request bodies that are not application/json;
--   * the access log's path (dynamic metadata `path`, envoy.yaml) has credential-shaped text
--     replaced, as services/platform/logger.ts scrubs the TypeScript edge's log lines.
--
-- The tables below are copies of services/edge/status.ts (gRPC code -> HTTP status) and of Node's
-- reason phrases (the error body's title): test/deploy/error-mapper.test.ts compares them entry for
-- entry, and runs this file under a Lua VM against the TypeScript edge's cases, failing when the
-- two edges disagree.
--
-- Envoy runs LuaJIT (Lua 5.1): no integer division, no bit operators, no utf8 library here.

local GRPC_TO_HTTP = {
  [0] = 200, -- OK
  [1] = 499, -- CANCELLED
  [2] = 500, -- UNKNOWN
  [3] = 400, -- INVALID_ARGUMENT
  [4] = 504, -- DEADLINE_EXCEEDED
  [5] = 404, -- NOT_FOUND
  [6] = 409, -- ALREADY_EXISTS
  [7] = 403, -- PERMISSION_DENIED
  [8] = 429, -- RESOURCE_EXHAUSTED
  [9] = 400, -- FAILED_PRECONDITION
  [10] = 409, -- ABORTED
  [11] = 400, -- OUT_OF_RANGE
  [12] = 501, -- UNIMPLEMENTED
  [13] = 500, -- INTERNAL
  [14] = 503, -- UNAVAILABLE
  [15] = 500, -- DATA_LOSS
  [16] = 401, -- UNAUTHENTICATED
}

local REASON = {
  [400] = "Bad Request", [401] = "Unauthorized", [402] = "Payment Required", [403] = "Forbidden",
  [404] = "Not Found", [405] = "Method Not Allowed", [406] = "Not Acceptable",
  [407] = "Proxy Authentication Required", [408] = "Request Timeout", [409] = "Conflict",
  [410] = "Gone", [411] = "Length Required", [412] = "Precondition Failed",
  [413] = "Payload Too Large", [414] = "URI Too Long", [415] = "Unsupported Media Type",
  [416] = "Range Not Satisfiable", [417] = "Expectation Failed", [418] = "I'm a Teapot",
  [421] = "Misdirected Request", [422] = "Unprocessable Entity", [423] = "Locked",
  [424] = "Failed Dependency", [425] = "Too Early", [426] = "Upgrade Required",
  [428] = "Precondition Required", [429] = "Too Many Requests",
  [431] = "Request Header Fields Too Large", [451] = "Unavailable For Legal Reasons",
  [499] = "Client Closed Request",
  [500] = "Internal Server Error", [501] = "Not Implemented", [502] = "Bad Gateway",
  [503] = "Service Unavailable", [504] = "Gateway Timeout", [505] = "HTTP Version Not Supported",
  [506] = "Variant Also Negotiates", [507] = "Insufficient Storage", [508] = "Loop Detected",
  [509] = "Bandwidth Limit Exceeded", [510] = "Not Extended",
  [511] = "Network Authentication Required",
}

local METADATA_NAMESPACE = "envoy.filters.http.lua"

local function http_status_from_code(code)
  return GRPC_TO_HTTP[code] or 500
end

local function reason_phrase(status)
  return REASON[status] or "Unknown Status"
end

---------------------------------------------------------------------------------------------------
-- JSON: a complete decoder (bodies come from protobuf's JSON printer or Envoy's formatter) and a
-- string encoder that writes exactly what JavaScript's JSON.stringify writes.

local ESCAPES = {
  ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f",
  ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t",
}

local function json_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    local e = ESCAPES[c]
    if e then return e end
    local b = c:byte()
    if b < 32 then return string.format("\\u%04x", b) end
    return c -- DEL (127) is a control character to Lua, not to JSON
  end) .. '"'
end

local function utf8_char(cp)
  if cp < 0x80 then return string.char(cp) end
  if cp < 0x800 then
    return string.char(0xC0 + math.floor(cp / 0x40), 0x80 + cp % 0x40)
  end
  if cp < 0x10000 then
    return string.char(0xE0 + math.floor(cp / 0x1000), 0x80 + math.floor(cp / 0x40) % 0x40, 0x80 + cp % 0x40)
  end
  return string.char(0xF0 + math.floor(cp / 0x40000), 0x80 + math.floor(cp / 0x1000) % 0x40,
    0x80 + math.floor(cp / 0x40) % 0x40, 0x80 + cp % 0x40)
end

local SIMPLE_UNESCAPES = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }

-- Decoding returns (value, next_position) or raises; decode_json catches and answers nil.
local decode_value

local function skip_ws(text, pos)
  return text:find("[^ \t\r\n]", pos) or #text + 1
end

local function decode_string(text, pos)
  -- text:sub(pos, pos) == '"'
  local parts = {}
  local i = pos + 1
  while true do
    local j = text:find('["\\]', i)
    if not j then error("unterminated string") end
    parts[#parts + 1] = text:sub(i, j - 1)
    if text:sub(j, j) == '"' then return table.concat(parts), j + 1 end
    local esc = text:sub(j + 1, j + 1)
    if SIMPLE_UNESCAPES[esc] then
      parts[#parts + 1] = SIMPLE_UNESCAPES[esc]
      i = j + 2
    elseif esc == "u" then
      local hex = text:sub(j + 2, j + 5)
      if not hex:match("^%x%x%x%x$") then error("bad \\u escape") end
      local cp = tonumber(hex, 16)
      i = j + 6
      if cp >= 0xD800 and cp <= 0xDBFF and text:sub(i, i + 1) == "\\u" then
        local low = tonumber(text:sub(i + 2, i + 5), 16)
        if low and low >= 0xDC00 and low <= 0xDFFF then
          cp = 0x10000 + (cp - 0xD800) * 0x400 + (low - 0xDC00)
          i = i + 6
        end
      end
      parts[#parts + 1] = utf8_char(cp)
    else
      error("bad escape")
    end
  end
end

decode_value = function(text, pos)
  pos = skip_ws(text, pos)
  local c = text:sub(pos, pos)
  if c == "{" then
    local obj = {}
    pos = skip_ws(text, pos + 1)
    if text:sub(pos, pos) == "}" then return obj, pos + 1 end
    while true do
      if text:sub(pos, pos) ~= '"' then error("expected a key") end
      local key
      key, pos = decode_string(text, pos)
      pos = skip_ws(text, pos)
      if text:sub(pos, pos) ~= ":" then error("expected ':'") end
      obj[key], pos = decode_value(text, pos + 1)
      pos = skip_ws(text, pos)
      local sep = text:sub(pos, pos)
      if sep == "}" then return obj, pos + 1 end
      if sep ~= "," then error("expected ',' or '}'") end
      pos = skip_ws(text, pos + 1)
    end
  elseif c == "[" then
    local arr = {}
    pos = skip_ws(text, pos + 1)
    if text:sub(pos, pos) == "]" then return arr, pos + 1 end
    while true do
      arr[#arr + 1], pos = decode_value(text, pos)
      pos = skip_ws(text, pos)
      local sep = text:sub(pos, pos)
      if sep == "]" then return arr, pos + 1 end
      if sep ~= "," then error("expected ',' or ']'") end
      pos = pos + 1
    end
  elseif c == '"' then
    return decode_string(text, pos)
  elseif text:sub(pos, pos + 3) == "true" then
    return true, pos + 4
  elseif text:sub(pos, pos + 4) == "false" then
    return false, pos + 5
  elseif text:sub(pos, pos + 3) == "null" then
    return nil, pos + 4
  end
  local num = text:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
  if num == nil or num == "" or tonumber(num) == nil then error("unexpected character") end
  return tonumber(num), pos + #num
end

local function decode_json(text)
  local ok, value, pos = pcall(decode_value, text, 1)
  if not ok or skip_ws(text, pos) <= #text then return nil end
  return value
end

---------------------------------------------------------------------------------------------------
-- The error body.

local function error_body(status, detail, request_id)
  return '{"title":' .. json_string(reason_phrase(status)) ..
      ',"detail":' .. json_string(detail) ..
      ',"status":' .. string.format("%d", status) ..
      ',"requestId":' .. json_string(request_id) .. "}"
end

-- On the OTLP/HTTP paths (RAW_BODY_PATHS below) every error answer is instead a google.rpc.Status
-- in the request's encoding, as the OTLP specification has it and services/platform/otlp-http.ts
-- writes it: its code left 0 (omitted), its message the detail. Protobuf: field 2 (message),
-- length-delimited; JSON: protobuf's JSON of that message.
local function varint(n)
  local out = {}
  while n >= 128 do
    out[#out + 1] = string.char(128 + n % 128)
    n = math.floor(n / 128)
  end
  out[#out + 1] = string.char(n)
  return table.concat(out)
end

local OTLP_CONTENT_TYPES = { protobuf = "application/x-protobuf", json = "application/json" }

local function otlp_status_body(detail, encoding)
  if encoding == "json" then
    if detail == "" then return "{}" end
    return '{"message":' .. json_string(detail) .. "}"
  end
  if detail == "" then return "" end
  return "\18" .. varint(#detail) .. detail
end

-- gRPC percent-encodes grpc-message; invalid sequences stay as they are.
local function percent_decode(s)
  return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

local function is_error_shape(obj)
  return type(obj) == "table" and type(obj.title) == "string" and type(obj.detail) == "string"
      and type(obj.status) == "number"
end

-- A detail that is itself our error body (local_reply_config formats Envoy's local replies that
-- way, and a gRPC local reply carries that text in grpc-message) is unwrapped to its detail.
local function unwrap_detail(detail)
  if detail:sub(1, 1) ~= "{" then return detail end
  local inner = decode_json(detail)
  if is_error_shape(inner) then return inner.detail end
  return detail
end

--- Status and detail of an error response, from what reached this filter:
--- status: the :status Envoy set; body: the body text ("" when none);
--- grpc_status / grpc_message: those headers when a gRPC status was not converted to a body.
local function describe_error(status, body, grpc_status, grpc_message)
  local code = tonumber(grpc_status or "")
  if code ~= nil and code ~= 0 then status = http_status_from_code(code) end
  local obj = nil
  if body:sub(1, 1) == "{" then obj = decode_json(body) end
  if type(obj) == "table" and type(obj.code) == "number" and obj.title == nil then
    -- google.rpc.Status written by the transcoder (convert_grpc_status): {code, message, details}.
    if obj.code ~= 0 then status = http_status_from_code(obj.code) end
    local message = obj.message
    if type(message) ~= "string" then message = "" end
    return status, unwrap_detail(message)
  end
  if is_error_shape(obj) then return status, obj.detail end
  if grpc_message ~= nil then return status, unwrap_detail(percent_decode(grpc_message)) end
  -- Envoy's own local replies are plain text.
  return status, (body:gsub("[\r\n]+$", ""))
end

---------------------------------------------------------------------------------------------------
-- Request ids.

local function valid_request_id(id)
  return id ~= nil and #id >= 1 and #id <= 200 and id:find("[^\33-\126]") == nil
end

-- Request ids correlate logs; they need to be unique, not unpredictable. Each worker seeds its
-- own generator from the clock and an address, so workers and pods do not share a sequence.
do
  local clock = (os and os.time and os.time() or 0) + math.floor((os and os.clock and os.clock() or 0) * 1000000)
  local address = tonumber((tostring({}):match("0x(%x+)") or "0"):sub(-7), 16) or 0
  math.randomseed((clock + address) % 2147483647)
end

local function new_request_id()
  local hex = "0123456789abcdef"
  local out = {}
  for i = 1, 36 do
    if i == 9 or i == 14 or i == 19 or i == 24 then
      out[i] = "-"
    elseif i == 15 then
      out[i] = "4"
    elseif i == 20 then
      local n = math.random(8, 11)
      out[i] = hex:sub(n + 1, n + 1)
    else
      local n = math.random(0, 15)
      out[i] = hex:sub(n + 1, n + 1)
    end
  end
  return table.concat(out)
end

---------------------------------------------------------------------------------------------------
-- Request checks the TypeScript edge makes before calling a service (services/edge/body.ts).

local BODY_METHODS = { POST = true, PUT = true, PATCH = true }

local function announces_body(headers)
  local length = headers:get("content-length")
  if length ~= nil then return (tonumber(length) or 0) > 0 end
  return headers:get("transfer-encoding") ~= nil
end

local function is_json_media_type(content_type)
  local essence = content_type:match("^([^;]*)") or ""
  essence = essence:gsub("^%s+", ""):gsub("%s+$", ""):lower()
  return essence == "application/json"
end

local function is_grpc(content_type)
  return content_type ~= nil and content_type:lower():find("^application/grpc") ~= nil
end

-- The OTLP/HTTP routes (OtlpHttpService): their request is google.api.HttpBody, the raw body of
-- any media type, which the service judges (415 for what OTLP does not take), and gzip passes
-- through for the service to undo. services/edge/body.ts readRawBody does the same.
local RAW_BODY_PATHS = { ["/v1/logs"] = true, ["/v1/metrics"] = true, ["/v1/traces"] = true }
local RAW_BODY_CODINGS = { identity = true, gzip = true }

local function raw_body_refusal(headers)
  local encoding = headers:get("content-encoding")
  if encoding ~= nil and not RAW_BODY_CODINGS[encoding:lower():gsub("^%s+", ""):gsub("%s+$", "")] then
    return 415, 'Unsupported Content-Encoding "' .. encoding .. '"'
  end
  return nil
end

--- Status and detail of a request refused before transcoding, or nil when it may go on.
-- OTLP/gRPC (docs/otlp.md): the OpenTelemetry collector services are the one gRPC that passes,
-- to the analytics module's public port (envoy.yaml routes them), answered as the service answers.
local OTLP_GRPC_PREFIX = "/opentelemetry.proto.collector."

local function is_otlp_grpc(headers)
  local path = headers:get(":path") or ""
  return is_grpc(headers:get("content-type")) and path:sub(1, #OTLP_GRPC_PREFIX) == OTLP_GRPC_PREFIX
end

local function refuse_request(headers)
  local content_type = headers:get("content-type")
  if is_grpc(content_type) then
    -- The edge speaks REST/JSON only; no gRPC call, to a public or an internal service, passes.
    local path = headers:get(":path") or ""
    return 404, "Could not resolve " .. (path:match("^([^?]*)") or path) .. " to a method."
  end
  local path = (headers:get(":path") or ""):match("^([^?]*)")
  if RAW_BODY_PATHS[path] then return raw_body_refusal(headers) end
  if not BODY_METHODS[headers:get(":method") or ""] or not announces_body(headers) then return nil end
  if content_type == nil then
    return 415, "Missing Content-Type; request bodies must be application/json"
  end
  if not is_json_media_type(content_type) then
    return 415, 'Unsupported Content-Type "' .. content_type .. '"; request bodies must be application/json'
  end
  local encoding = headers:get("content-encoding")
  if encoding ~= nil and encoding:lower() ~= "identity" then
    return 415, 'Unsupported Content-Encoding "' .. encoding .. '"'
  end
  return nil
end

---------------------------------------------------------------------------------------------------
-- Credentials out of the access log: a client may put its key or token in a query value or a path
-- variable (`?repoId=apk_...`), and the log must not keep it. The same shapes and replacements as
-- redactCredentials in services/platform/logger.ts: API keys and workload tokens (apk_, aps_),
-- JWTs (eyJ... with two or three base64url parts), whatever follows "Bearer".

local KEY_CHARS = string.rep("[%w_%-]", 6) .. "[%w_%-]*"

local function redact_credentials(text)
  text = text:gsub("[Bb]earer%s+[^%s\"\\]+", "Bearer [redacted]")
  text = text:gsub("BEARER%s+[^%s\"\\]+", "Bearer [redacted]")
  text = text:gsub("(ap[ks])_" .. KEY_CHARS, "%1_[redacted]")
  text = text:gsub("eyJ[%w_%-]*%.[%w_%-]+%.?[%w_%-]*", "[redacted JWT]")
  return text
end

---------------------------------------------------------------------------------------------------
-- Envoy's entry points.

function envoy_on_request(request_handle)
  local headers = request_handle:headers()
  local id = headers:get("x-request-id")
  if not valid_request_id(id) then
    id = new_request_id()
    headers:replace("x-request-id", id)
  end
  request_handle:streamInfo():dynamicMetadata():set(METADATA_NAMESPACE, "request_id", id)
  -- Before the transcoder: still the client's REST path and query.
  request_handle:streamInfo():dynamicMetadata():set(METADATA_NAMESPACE, "path", redact_credentials(headers:get(":path") or ""))

  if is_otlp_grpc(headers) then
    -- Its answer is gRPC's (status in grpc-status): envoy_on_response leaves it alone.
    request_handle:streamInfo():dynamicMetadata():set(METADATA_NAMESPACE, "grpc_passthrough", "true")
    return
  end

  local path = (headers:get(":path") or ""):match("^([^?]*)")
  local otlp_encoding = nil
  if RAW_BODY_PATHS[path] then
    otlp_encoding = "protobuf"
    if is_json_media_type(headers:get("content-type") or "") then otlp_encoding = "json" end
    request_handle:streamInfo():dynamicMetadata():set(METADATA_NAMESPACE, "otlp_encoding", otlp_encoding)
  end

  local status, detail = refuse_request(headers)
  if status ~= nil then
    local body, content_type = error_body(status, detail, id), "application/json"
    if otlp_encoding ~= nil then
      body, content_type = otlp_status_body(detail, otlp_encoding), OTLP_CONTENT_TYPES[otlp_encoding]
    end
    request_handle:respond({
      [":status"] = tostring(status),
      ["content-type"] = content_type,
      ["content-length"] = tostring(#body),
      ["x-request-id"] = id,
    }, body)
  end
end

local function request_id_of(response_handle)
  local meta = response_handle:streamInfo():dynamicMetadata():get(METADATA_NAMESPACE)
  if meta ~= nil and meta.request_id ~= nil then return meta.request_id end
  -- A reply that never went through envoy_on_request (should not happen on this listener).
  return new_request_id()
end

local STATUS_RE = "^[1-5]%d%d$"

function envoy_on_response(response_handle)
  local headers = response_handle:headers()
  local id = request_id_of(response_handle)
  headers:replace("x-request-id", id)
  local meta = response_handle:streamInfo():dynamicMetadata():get(METADATA_NAMESPACE)
  if meta ~= nil and meta.grpc_passthrough == "true" then return end
  local status = tonumber(headers:get(":status")) or 500
  local grpc_status = headers:get("grpc-status")
  local http_code = headers:get("x-http-code")
  if http_code ~= nil then headers:remove("x-http-code") end

  if status >= 400 or (grpc_status ~= nil and grpc_status ~= "0") then
    local buffer = response_handle:body(true)
    local length = buffer:length()
    local text = ""
    if length > 0 then text = buffer:getBytes(0, length) end
    local new_status, detail = describe_error(status, text, grpc_status, headers:get("grpc-message"))
    local body, content_type = error_body(new_status, detail, id), "application/json"
    if meta ~= nil and meta.otlp_encoding ~= nil then
      body, content_type = otlp_status_body(detail, meta.otlp_encoding), OTLP_CONTENT_TYPES[meta.otlp_encoding]
    end
    headers:replace(":status", tostring(new_status))
    headers:replace("content-type", content_type)
    headers:remove("grpc-status")
    headers:remove("grpc-message")
    headers:remove("grpc-status-details-bin")
    buffer:setBytes(body)
    headers:replace("content-length", tostring(#body))
    return
  end

  if http_code == nil or status ~= 200 then return end
  if not http_code:match(STATUS_RE) or tonumber(http_code) < 200 then
    response_handle:logWarn("ignoring invalid x-http-code from service: " .. http_code)
    return
  end
  headers:replace(":status", http_code)
  if http_code == "204" or http_code == "304" then
    -- These statuses never carry a body (RFC 9110 section 6.4.1).
    response_handle:body(true):setBytes("")
    headers:remove("content-type")
    headers:remove("content-length")
  end
end
