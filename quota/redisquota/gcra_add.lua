-- GCRA: add the cost of calls a replica admitted on its own, without
-- deciding them. Follows clock.lua.
--
-- KEYS[1]  the bucket, as in gcra.lua
-- ARGV[1]  now, whole Unix seconds; empty for this server's clock
-- ARGV[2]  now, nanoseconds within that second
-- ARGV[3]  the emission interval in nanoseconds
-- ARGV[4]  the calls' total cost; 0 only reads
-- ARGV[5]  grace in milliseconds, added to the bucket's time to live
--
-- The tat moves to max(tat, now) + interval x cost, past the tolerance if
-- it must: calls admitted beyond the limit are then paid back before more
-- pass. How far the tat is ahead of now is capped at 9e15 ns (about 104
-- days), below 2^53, so the arithmetic stays exact; such a bucket refuses
-- every call anyway. Returns {now s, now ns, tat}, the tat after the cost
-- ("" for a full bucket).
local now_s, now_ns = clock()
local old = redis.call('GET', KEYS[1])
local ahead = 0
if old then
  local tat_s, tat_ns = split(old)
  ahead = math.max(0, (tat_s - now_s) * 1e9 + (tat_ns - now_ns))
end
local cost = tonumber(ARGV[4])
if cost == 0 then
  if ahead == 0 then
    return {now_s, now_ns, ''}
  end
  return {now_s, now_ns, old}
end
ahead = math.min(ahead + tonumber(ARGV[3]) * cost, 9e15)
local tat_s, tat_ns = later(now_s, now_ns, ahead)
local v = string.format('%d:%d', tat_s, tat_ns)
redis.call('SET', KEYS[1], v, 'PX', ceil_ms(ahead) + tonumber(ARGV[5]))
return {now_s, now_ns, v}
