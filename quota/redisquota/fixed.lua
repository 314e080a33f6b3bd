-- Fixed window: count calls in the bucket's current window. Follows
-- clock.lua.
--
-- KEYS[1]  the bucket; its value is "<window start s>:<ns>:<count>"
-- ARGV[1]  now, whole Unix seconds; empty for this server's clock
-- ARGV[2]  now, nanoseconds within that second (0 to 999999999)
-- ARGV[3]  the window: whole seconds
-- ARGV[4]  the window: nanoseconds beyond them
-- ARGV[5]  grace in milliseconds, added to a new window's time to live
-- ARGV[6…] the calls' costs, in arrival order; 0 only looks
--
-- Returns {now s, now ns, count}: the time the script decided by and the
-- window's count before these calls. The decisions are made in Go (the
-- shared arithmetic, quota/internal/store) from those, one call at a time,
-- so they cannot drift from the other stores'. Every cost is counted,
-- refused or not, as in the other stores.
--
-- A bucket holds one window. One of an earlier window is started afresh;
-- one of a later window (a clock that stepped back) keeps counting, as the
-- in-memory store does, rather than admit more than the limit.
local now_s, now_ns = clock()
local start_s, start_ns, left = window(now_s, now_ns, tonumber(ARGV[3]), tonumber(ARGV[4]))

local count, fresh = 0, true
local v = redis.call('GET', KEYS[1])
if v then
  local s, ns, c = split(v)
  if s > start_s or (s == start_s and ns >= start_ns) then
    start_s, start_ns, count, fresh = s, ns, c, false
  end
end

local total = 0
for i = 6, #ARGV do
  total = total + tonumber(ARGV[i])
end
if total > 0 then
  local value = string.format('%d:%d:%d', start_s, start_ns, count + total)
  if fresh then
    redis.call('SET', KEYS[1], value, 'PX', left + tonumber(ARGV[5]))
  else
    redis.call('SET', KEYS[1], value, 'KEEPTTL')
  end
end
return {now_s, now_ns, count}
