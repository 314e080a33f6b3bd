-- An HAProxy action that asks admit auth whether to let a request through,
-- as nginx's auth_request and Caddy's forward_auth do, with the HTTP client
-- HAProxy has had since 2.5:
--
--   http-request lua.admit <address of a frontend that passes to admit>
--
-- It tells admit the original request in the X-Forwarded family alone:
-- -Method, -Uri (the target as HAProxy forwards it, without scheme and
-- host), -Host, -Proto, and -For, the client's address as HAProxy saw it.
-- The request's other fields go along, so that a key read from a header
-- reaches admit. A client's own copies of either forwarding family are
-- dropped whole, by prefix, since admit believes what a trusted front tells
-- it and refuses a request told twice.
--
-- What admit answered is left in variables for the configuration's rules:
-- txn.admit_code, its status, or 0 when it did not answer, or 400 with
-- txn.admit_status "malformed" when admit could not be told the request
-- whole or the action failed on it; txn.admit_status, its Admit-Status;
-- txn.admit_retry_after, txn.admit_ratelimit and
-- txn.admit_ratelimit_policy, its Retry-After, RateLimit and
-- RateLimit-Policy.

-- Fields about the client's hop to HAProxy, or told in the family above,
-- never passed to admit.
local own = {
  ["connection"] = true, ["keep-alive"] = true, ["proxy-connection"] = true,
  ["te"] = true, ["trailer"] = true, ["transfer-encoding"] = true,
  ["upgrade"] = true, ["expect"] = true, ["content-length"] = true,
  ["host"] = true, ["forwarded"] = true,
}

-- HAProxy's default tune.http.maxhdr: its client must not be given more
-- fields than this (HAProxy 2.6.12 stops with a segmentation fault), so a
-- request that would need more is refused. Keep it equal to
-- tune.http.maxhdr.
local maxhdr = 101

-- What admit answers, by the variable the configuration reads.
local answers = {
  ["admit-status"] = "txn.admit_status",
  ["retry-after"] = "txn.admit_retry_after",
  ["ratelimit"] = "txn.admit_ratelimit",
  ["ratelimit-policy"] = "txn.admit_ratelimit_policy",
}

-- passed reports whether a client's field goes to admit: its name is
-- compared with "_" read as "-", as servers that map names to variables
-- read it.
local function passed(name)
  local n = name:lower():gsub("_", "-")
  return not own[n] and n:sub(1, 12) ~= "x-forwarded-" and n:sub(1, 11) ~= "x-original-"
end

-- list returns a field's values as HAProxy gives them, numbered from 0 in
-- the order received, as the list its client sends; none for a field the
-- request lacks (HTTP/1.0 without Host).
local function list(values)
  local out = {}
  if values == nil then
    return out
  end
  for i = 0, #values do
    out[#out + 1] = values[i]
  end
  return out
end

-- request returns the fields of the request to admit, and their count.
local function request(txn)
  local fields, count = {}, 0
  local received = txn.http:req_get_headers()
  for name, values in pairs(received) do
    if passed(name) then
      fields[name] = list(values)
      count = count + #fields[name]
    end
  end
  fields["X-Forwarded-Host"] = list(received["host"])
  fields["X-Forwarded-Method"] = { txn.sf:method() }
  fields["X-Forwarded-Uri"] = { txn.sf:pathq() }
  -- A boolean fetch comes to Lua as 0 or 1, and 0 is true in Lua.
  fields["X-Forwarded-Proto"] = { txn.f:ssl_fc() == 1 and "https" or "http" }
  fields["X-Forwarded-For"] = { txn.sf:src() }
  return fields, count + #fields["X-Forwarded-Host"] + 4
end

-- untold refuses a request admit could not be told whole, as admit
-- refuses one it cannot read, in either failure mode.
local function untold(txn)
  txn:set_var("txn.admit_code", 400, true)
  txn:set_var("txn.admit_status", "malformed", true)
end

-- ask asks admit about the request and sets the variables from its
-- answer, leaving txn.admit_code 0 when admit did not answer.
local function ask(txn, dst)
  local fields, count = request(txn)
  if count > maxhdr then
    return untold(txn)
  end
  local res = core.httpclient():get{ url = "http://admit/", dst = dst, headers = fields }
  local outcome = type(res) == "table" and type(res.headers) == "table" and res.headers["admit-status"]
  if not outcome or not outcome[0] then
    -- Every answer of admit names its outcome, so this one is HAProxy's
    -- own: a 5xx when admit is down or slow, or a 4xx when the request to
    -- admit was more than HAProxy reads (tune.bufsize), which admit never
    -- saw.
    local status = type(res) == "table" and tonumber(res.status) or 0
    if status >= 400 and status < 500 then
      untold(txn)
    end
    return
  end
  txn:set_var("txn.admit_code", res.status, true)
  for name, var in pairs(answers) do
    local vs = res.headers[name]
    if vs and vs[0] then
      txn:set_var(var, vs[0], true)
    end
  end
end

local function admit(txn, dst)
  txn:set_var("txn.admit_code", 0, true)
  -- An error here is the action's own on a request it could not read or
  -- pass on, never admit's silence, so it refuses the request in either
  -- failure mode rather than leave it to fail open.
  if not pcall(ask, txn, dst) then
    untold(txn)
  end
end

core.register_action("admit", { "http-req" }, admit, 1)
