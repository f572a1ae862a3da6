-- How long this server has been up, in seconds (INFO server's uptime_in_seconds). Redlock sends it
-- first in every pipeline to a node, on the same connection as the calls that follow: a node that
-- restarted (and so may have come back without the records it held) is written to, but its answers
-- do not count until it has been up longer than any record can live (the restart quarantine).
local info = redis.call('INFO', 'server')
return tonumber(string.match(info, 'uptime_in_seconds:(%d+)'))
