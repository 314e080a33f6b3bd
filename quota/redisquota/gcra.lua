-- GCRA: spend tokens of the bucket for each call that fits. Follows
-- clock.lua.
--
-- KEYS[1]  the bucket; its value is the theoretical arrival time (tat) as
--          "<unix seconds>:<nanoseconds>"
-- ARGV[1]  now, whole Unix seconds; empty for this server's clock
-- ARGV[2]  now, nanoseconds within that second (0 to 999999999)
-- ARGV[3]  the emission interval in nanoseconds (Window / Limit)
-- ARGV[4]  the tolerance in nanoseconds (interval x burst)
-- ARGV[5]  grace in milliseconds, added to the bucket's time to live
-- ARGV[6…] the calls' costs, in arrival order; 0 only looks
--
-- Returns {now s, now ns, passed, tat}: the time the script decided by, how
-- many calls spent tokens, and the tat before these calls ("" for a new
-- bucket). The decisions are made in Go (the shared arithmetic,
-- quota/internal/store) from the time and the tat, one call at a time; this
-- script makes the same comparison to know what to store, and Go checks
-- that both let the same number of calls pass.
--
-- Spans are counted in nanoseconds from now: the caller bounds interval x
-- (burst + cost) below 2^53, so every span stored is exact. A tat so far
-- ahead that the span is not exact lets no call pass, and is kept.
local now_s, now_ns = clock()
local interval, tolerance = tonumber(ARGV[3]), tonumber(ARGV[4])

local old = redis.call('GET', KEYS[1])
local ahead = 0 -- how far the tat is past now; 0 for a full bucket
if old then
  local tat_s, tat_ns = split(old)
  ahead = math.max(0, (tat_s - now_s) * 1e9 + (tat_ns - now_ns))
else
  old = ''
end

local passed = 0
for i = 6, #ARGV do
  local n = tonumber(ARGV[i])
  if n > 0 and ahead + interval * n <= tolerance then
    ahead = ahead + interval * n
    passed = passed + 1
  end
end

if passed > 0 then
  local tat_s, tat_ns = later(now_s, now_ns, ahead)
  redis.call('SET', KEYS[1], string.format('%d:%d', tat_s, tat_ns),
    'PX', ceil_ms(ahead) + tonumber(ARGV[5]))
end
return {now_s, now_ns, passed, old}
