-- GCRA: spend n tokens of one subject's bucket if it holds them.
--
-- KEYS[1]  the bucket: prefix .. rule .. ":" .. subject; its value is the
--          theoretical arrival time (tat) as "<unix seconds>:<nanoseconds>"
-- ARGV[1]  now, whole Unix seconds
-- ARGV[2]  now, nanoseconds within that second (0 to 999999999)
-- ARGV[3]  the emission interval in nanoseconds (Window / Limit)
-- ARGV[4]  the tolerance in nanoseconds (interval x burst)
-- ARGV[5]  n, the tokens to spend; 0 only looks
-- ARGV[6]  grace in milliseconds, added to the bucket's time to live
--
-- Returns the tat before this call ("" for a new bucket). The decision is made
-- in Go (the shared arithmetic, quota/internal/store) from that tat; this script makes the same
-- comparison to decide whether to store the new one.
--
-- Lua numbers are doubles, exact for integers below 2^53. Nanoseconds since
-- the epoch (about 1.8e18) are not, so times travel as seconds and
-- nanoseconds, and only differences (bounded by the caller to 2^53ns, about
-- 104 days) are computed in nanoseconds.
local now_s, now_ns = tonumber(ARGV[1]), tonumber(ARGV[2])
local interval, tolerance = tonumber(ARGV[3]), tonumber(ARGV[4])
local n = tonumber(ARGV[5])

local old = redis.call('GET', KEYS[1])
local base_s, base_ns, ahead = now_s, now_ns, 0
if old then
  local sep = string.find(old, ':', 1, true)
  local tat_s = tonumber(string.sub(old, 1, sep - 1))
  local tat_ns = tonumber(string.sub(old, sep + 1))
  local d = (tat_s - now_s) * 1e9 + (tat_ns - now_ns)
  if d > 0 then
    base_s, base_ns, ahead = tat_s, tat_ns, d
  end
else
  old = ''
end

local cost = n
if cost == 0 then
  cost = 1 -- a look asks whether one call would pass
end
if n == 0 or ahead + interval * cost > tolerance then
  return old
end

local t = base_ns + interval * n
local tat_s = base_s + math.floor(t / 1e9)
local tat_ns = t % 1e9
local ttl = math.ceil((ahead + interval * n) / 1e6) + tonumber(ARGV[6])
redis.call('SET', KEYS[1], string.format('%d:%d', tat_s, tat_ns), 'PX', ttl)
return old
