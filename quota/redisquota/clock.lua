-- The start of every script: the store sends this file and the script's own
-- text as one script. It reads the decision's time and does the arithmetic of
-- time that more than one script needs.
--
-- Lua numbers are doubles, exact only for integers below 2^53. Nanoseconds
-- since 1970 (about 1.8e18) are beyond that, so a time is two numbers, whole
-- Unix seconds and nanoseconds within the second, and only spans the caller
-- bounds below 2^53ns (about 104 days) are ever counted in nanoseconds.

-- clock returns the time the script decides by, as seconds and nanoseconds:
-- ARGV[1] and ARGV[2] when the caller sends its clock's time, or, when
-- ARGV[1] is empty, this server's own clock (TIME, in microseconds). Scripts
-- are replicated by their effects, so a replica never reads its own clock.
local function clock()
  if ARGV[1] == '' then
    local t = redis.call('TIME')
    return tonumber(t[1]), tonumber(t[2]) * 1000
  end
  return tonumber(ARGV[1]), tonumber(ARGV[2])
end

-- ceil_ms rounds a non-negative span of nanoseconds below 2^53 up to whole
-- milliseconds, exactly.
local function ceil_ms(ns)
  local r = ns % 1e6
  if r == 0 then
    return ns / 1e6
  end
  return (ns - r) / 1e6 + 1
end

-- later returns the time span nanoseconds (below 2^53) after s, ns.
local function later(s, ns, span)
  local span_s = math.floor(span / 1e9)
  local t = ns + (span - span_s * 1e9)
  if t >= 1e9 then
    return s + span_s + 1, t - 1e9
  end
  return s + span_s, t
end

-- window returns the start (seconds, nanoseconds) of the fixed window of
-- w_s seconds plus w_ns nanoseconds that holds the time s, ns, as
-- store.WindowStart does (windows are aligned to the Unix epoch), and the
-- milliseconds left until the window ends, rounded up. A window of whole
-- seconds may be any length; any other must be below 2^52ns (about 52 days),
-- which the caller checks.
local function window(s, ns, w_s, w_ns)
  if w_ns == 0 then
    local r = s % w_s -- Lua's % floors, so r >= 0 before 1970 too
    return s - r, 0, (w_s - r) * 1000 - math.floor(ns / 1e6)
  end
  local w = w_s * 1e9 + w_ns
  -- off = (s * 1e9 + ns) mod w. s * 1e9 is not exact, so multiply s mod w
  -- by 1e9 one bit at a time: no step exceeds 2w, below 2^53.
  local a, off = s % w, 0
  local m, bit = 1e9, 536870912 -- 2^29, the highest bit of 1e9
  while bit >= 1 do
    off = (off * 2) % w
    if m >= bit then
      m = m - bit
      off = (off + a) % w
    end
    bit = bit / 2
  end
  off = (off + ns) % w
  local off_s = math.floor(off / 1e9)
  local start_s, start_ns = s - off_s, ns - (off - off_s * 1e9)
  if start_ns < 0 then
    start_s, start_ns = start_s - 1, start_ns + 1e9
  end
  return start_s, start_ns, ceil_ms(w - off)
end

-- split parses a value of two or three numbers joined by colons,
-- "<s>:<ns>" or "<s>:<ns>:<count>", and returns the numbers.
local function split(v)
  local i = string.find(v, ':', 1, true)
  local j = string.find(v, ':', i + 1, true)
  if j then
    return tonumber(string.sub(v, 1, i - 1)), tonumber(string.sub(v, i + 1, j - 1)), tonumber(string.sub(v, j + 1))
  end
  return tonumber(string.sub(v, 1, i - 1)), tonumber(string.sub(v, i + 1))
end
