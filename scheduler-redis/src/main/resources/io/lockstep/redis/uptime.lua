-- How long this server has been up, in seconds (INFO server's uptime_in_seconds). Redlock sends it
-- first in every pipeline to a node, on the same connection as the calls that follow: a node that
-- restarted (and so may have come back without the records it held) is written to, but its answers
-- do not count until it has been up longer than any record can live (the restart quarantine),
-- unless its deployment marker vouches for it (see marker.lua).
-- KEYS[1] the deployment marker (hash)
-- Returns {uptime (s), '1' if the marker vouches for this run of the server (it was written in this
-- run, as the first of a new deployment, on a server without Lockstep's state: the server had
-- nothing a restart could have lost), else '0', the marker's id ('' if none)}. A run of the server
-- is its run_id, new at every start.
local info = redis.call('INFO', 'server')
local m = redis.call('HMGET', KEYS[1], 'id', 'run', 'fresh')
local fresh = (m[3] == '1' and m[2] == string.match(info, 'run_id:(%w+)')) and '1' or '0'
return {tonumber(string.match(info, 'uptime_in_seconds:(%d+)')), fresh, m[1] or ''}
