-- GCRA: give back n tokens of the bucket: its theoretical arrival time (tat)
-- moves back by n intervals. Follows clock.lua.
--
-- KEYS[1]  the bucket, as in gcra.lua
-- ARGV[1]  now, whole Unix seconds; empty for this server's clock
-- ARGV[2]  now, nanoseconds within that second
-- ARGV[3]  the emission interval in nanoseconds
-- ARGV[4]  n, the tokens to give back
-- ARGV[5]  grace in milliseconds, added to the bucket's time to live
--
-- A bucket whose tat falls to now or before is full, and decides like a
-- missing one, so it is deleted. Spans in nanoseconds stay below 2^53, as in
-- gcra.lua. Returns 1 when the bucket still holds a tat, else 0.
local old = redis.call('GET', KEYS[1])
if not old then
  return 0
end
local now_s, now_ns = clock()
local tat_s, tat_ns = split(old)
local ahead = (tat_s - now_s) * 1e9 + (tat_ns - now_ns) - tonumber(ARGV[3]) * tonumber(ARGV[4])
if ahead <= 0 then
  redis.call('DEL', KEYS[1])
  return 0
end
tat_s, tat_ns = later(now_s, now_ns, ahead)
redis.call('SET', KEYS[1], string.format('%d:%d', tat_s, tat_ns),
  'PX', ceil_ms(ahead) + tonumber(ARGV[5]))
return 1
