-- Fixed window: give back n calls of one window's bucket, never below zero.
--
-- KEYS[1]  the bucket, as in fixed.lua
-- ARGV[1]  n, the calls to give back
--
-- A missing bucket (its window ended) has nothing to give back. The count
-- keeps its time to live.
local v = redis.call('GET', KEYS[1])
if not v then
  return 0
end
local count = tonumber(v) - tonumber(ARGV[1])
if count < 0 then
  count = 0
end
redis.call('SET', KEYS[1], count, 'KEEPTTL')
return count
