-- Counter: add to a count in the fixed window, aligned to the Unix epoch,
-- that holds the current time, as envoyproxy/ratelimit's INCRBY does.
--
-- KEYS[1]  the counter: a hash, w = the window's start (Unix seconds) and
--          c = its count
-- ARGV[1]  now, whole Unix seconds; empty for this server's clock
-- ARGV[2]  the window, whole seconds
-- ARGV[3]  what to add, a decimal integer; 0 only reads
--
-- Returns {now, count after}. A counter of an earlier window starts afresh;
-- one of a later window (a clock that stepped back) counts on there, as the
-- quota scripts do. A new window's counter expires a second after it ends.
local now
if ARGV[1] == '' then
  now = tonumber(redis.call('TIME')[1])
else
  now = tonumber(ARGV[1])
end
local w = tonumber(ARGV[2])
local start = now - now % w
local held = tonumber(redis.call('HGET', KEYS[1], 'w'))
if held == nil or held < start then
  if ARGV[3] == '0' then
    return {now, 0}
  end
  redis.call('HSET', KEYS[1], 'w', start, 'c', 0)
  redis.call('EXPIRE', KEYS[1], start + w - now + 1)
end
return {now, redis.call('HINCRBY', KEYS[1], 'c', ARGV[3])}
