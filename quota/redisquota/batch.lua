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
--          arguments it takes after the clock, and those arguments
--
-- Returns every run's reply, in KEYS' order, one after another, so that the
-- store reads them without a table per run; the store knows how long each
-- is. A run that fails stops the batch: the buckets before it keep what
-- their runs did, and the store fails every call of the batch.
local batch_s, batch_ns = clock()
local function batch_clock()
  return batch_s, batch_ns
end
local runs = {}
--@scripts@
local out, k, a = {}, 0, 3
for i = 1, #KEYS do
  local run, n = runs[tonumber(ARGV[a])], tonumber(ARGV[a + 1])
  local args = {ARGV[1], ARGV[2]}
  for j = 1, n do
    args[j + 2] = ARGV[a + 1 + j]
  end
  a = a + 2 + n
  local reply = run({KEYS[i]}, args)
  for j = 1, #reply do
    k = k + 1
    out[k] = reply[j]
  end
end
return out
