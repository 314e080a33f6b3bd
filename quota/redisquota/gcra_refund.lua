-- GCRA: give back n tokens of one subject's bucket: its theoretical arrival
-- time (tat) moves back by n intervals.
--
-- KEYS[1]  the bucket, as in gcra.lua
-- ARGV[1]  now, whole Unix seconds
-- ARGV[2]  now, nanoseconds within that second
-- ARGV[3]  the emission interval in nanoseconds
-- ARGV[4]  n, the tokens to give back
-- ARGV[5]  grace in milliseconds, added to the bucket's time to live
--
-- A bucket whose tat falls to now or before is full, and decides like a
-- missing one, so it is deleted. Differences in nanoseconds stay below 2^53,
-- as in gcra.lua.
local old = redis.call('GET', KEYS[1])
if not old then
  return 0
end
local now_s, now_ns = tonumber(ARGV[1]), tonumber(ARGV[2])
local sep = string.find(old, ':', 1, true)
local tat_s = tonumber(string.sub(old, 1, sep - 1))
local tat_ns = tonumber(string.sub(old, sep + 1))
local ahead = (tat_s - now_s) * 1e9 + (tat_ns - now_ns) - tonumber(ARGV[3]) * tonumber(ARGV[4])
if ahead <= 0 then
  redis.call('DEL', KEYS[1])
  return 0
end
local t = now_ns + ahead
redis.call('SET', KEYS[1], string.format('%d:%d', now_s + math.floor(t / 1e9), t % 1e9),
  'PX', math.ceil(ahead / 1e6) + tonumber(ARGV[5]))
return 1
