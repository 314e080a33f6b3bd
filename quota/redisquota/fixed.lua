-- Fixed window: count n calls in one window's bucket.
--
-- KEYS[1]  the bucket: prefix .. rule .. ":" .. subject .. ":" .. window start
-- ARGV[1]  n, the calls to count; 0 only looks
-- ARGV[2]  the bucket's time to live in milliseconds, set when this call
--          creates it
--
-- Returns the bucket's count after this call. The decision is made in Go
-- (the shared arithmetic, quota/internal/store) from that count, so it cannot drift from the
-- other stores'.
local n = tonumber(ARGV[1])
if n == 0 then
  return tonumber(redis.call('GET', KEYS[1]) or '0')
end
local count = redis.call('INCRBY', KEYS[1], n)
if count == n then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return count
