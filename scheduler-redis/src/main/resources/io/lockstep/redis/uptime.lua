-- How long this server has been up, in seconds (INFO server's uptime_in_seconds). Redlock sends it
-- first in every pipeline to a node, on the same connection as the calls that follow: a node that
-- restarted (and so may have come back without the records it held) is written to, but its answers
-- do not count until it has been up longer than any record can live (the restart quarantine),
-- unless its deployment marker vouches for it (see marker.lua).
-- KEYS[1] the scheduler's deployment marker (hash); none for the lock API (nothing vouches there)
-- ARGV[1] the quarantine (ms): a marker copied to this server (see marker.lua) counts as having come
-- back with its data only once it is that old
-- Returns {uptime (s), '1' if the marker was written in this run of the server (its run_id, new at
-- every start) as the first of a new deployment on a server without Lockstep's state (the server
-- had nothing a restart could have lost), else '0', the marker's id ('' if none), '1' if the
-- marker was written in an earlier run of the server (it came back with its data), else '0',
-- '1' if the server runs with its append-only file (INFO persistence's aof_enabled), else '0', its
-- run_id}. The AOF flag
-- last is read only when it matters: the marker came back and the server is within the quarantine
-- (a master declared durable vouches for itself then only with its AOF on: an RDB snapshot or a
-- restored backup brings back an old marker, and records older than its last writes).
local info = redis.call('INFO', 'server')
local up = tonumber(string.match(info, 'uptime_in_seconds:(%d+)'))
if #KEYS == 0 then
  return {up, '0', '', '0', '0'}
end
local run = string.match(info, 'run_id:(%w+)')
local m = redis.call('HMGET', KEYS[1], 'id', 'run', 'fresh', 'copied')
local fresh = (m[3] == '1' and m[2] == run) and '1' or '0'
local survived = '0'
if m[1] and m[2] ~= run then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if not m[4] or now - tonumber(m[4]) >= tonumber(ARGV[1] or '0') then
    survived = '1'
  end
end
local aof = '0'
if survived == '1' and up <= math.floor((tonumber(ARGV[1] or '0') + 999) / 1000) then
  aof = string.match(redis.call('INFO', 'persistence'), 'aof_enabled:(%d)') == '1' and '1' or '0'
end
return {up, fresh, m[1] or '', survived, aof, run}
