-- Batch: run the scripts of many buckets in one script run, on one server
-- (a plain or failover client; a cluster's keys live on many). Redis then
-- parses one command, sets up Lua once and reads its clock once, instead of
-- once per bucket. The store sends clock.lua, this file with each script it
-- runs put in place of the line "--@scripts@" as runs[number], and nothing
-- else: each script's text is its own, run with the batch's clock.
--
-- KEYS[i]  the bucket of the i-th run
-- ARGV[1]  now, whole Unix seconds; empty for this server's clock
-- ARGV[2]  now, nanoseconds within that second
-- ARGV[3…] for each run in KEYS' order: the script's number, how many
--          values it replies, how many arguments it takes after the clock,
--          and those arguments
--
-- Returns every run's reply, in KEYS' order, one after another, so that the
-- store reads them without a table per run. A run that fails, or replies
-- other than as many values as it should, stands as "E " and its error, in
-- the place of the integer every reply starts with, followed by zeros to
-- its reply's length, and the runs after it go on: as in a
-- pipeline, one bucket's error fails that bucket's calls alone. The scripts
-- fail only before they write, so a failed run has changed nothing.
local batch_s, batch_ns = clock()
local function batch_clock()
  return batch_s, batch_ns
end
local runs = {}
--@scripts@
local out, k, a = {}, 0, 3
for i = 1, #KEYS do
  local number, replies, n = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local args = {ARGV[1], ARGV[2]}
  for j = 1, n do
    args[j + 2] = ARGV[a + 2 + j]
  end
  a = a + 3 + n
  local ok, reply = pcall(runs[number], {KEYS[i]}, args)
  if ok and type(reply) == 'table' and reply.err then
    ok, reply = false, reply.err
  elseif ok and (type(reply) ~= 'table' or #reply ~= replies) then
    ok, reply = false, 'script ' .. number .. ' did not reply ' .. replies .. ' values'
  end
  if ok then
    for j = 1, replies do
      k = k + 1
      out[k] = reply[j]
    end
  else
    -- Where an integer stands in every reply, a string: an error reply
    -- inside the array would do, but go-redis stops reading an array at
    -- some of them (OOM, READONLY) and leaves the rest on the connection.
    k = k + 1
    out[k] = 'E ' .. tostring(reply)
    for _ = 2, replies do
      k = k + 1
      out[k] = 0
    end
  end
end
return out
