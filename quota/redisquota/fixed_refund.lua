-- Fixed window: give back n calls of the bucket's current window, never
-- below zero. Follows clock.lua.
--
-- KEYS[1]  the bucket, as in fixed.lua
-- ARGV[1]  now, whole Unix seconds; empty for this server's clock
-- ARGV[2]  now, nanoseconds within that second
-- ARGV[3]  the window: whole seconds
-- ARGV[4]  the window: nanoseconds beyond them
-- ARGV[5]  n, the calls to give back
--
-- Only a bucket that holds the current window gives back: a call counted
-- in an earlier window has nothing left to refund, and a bucket a clock
-- stepped back from is not the one such a call was counted in. The count
-- keeps its time to live. Returns the count after the refund, or -1 when
-- nothing was given back.
local now_s, now_ns = clock()
local start_s, start_ns = window(now_s, now_ns, tonumber(ARGV[3]), tonumber(ARGV[4]))
local v = redis.call('GET', KEYS[1])
if not v then
  return -1
end
local s, ns, count = split(v)
if s ~= start_s or ns ~= start_ns then
  return -1
end
count = math.max(0, count - tonumber(ARGV[5]))
redis.call('SET', KEYS[1], string.format('%d:%d:%d', s, ns, count), 'KEEPTTL')
return count
