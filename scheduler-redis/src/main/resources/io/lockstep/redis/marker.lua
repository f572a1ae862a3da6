-- Redlock: the deployment marker of one master, written once and kept (no ttl). It tells a master
-- that lost its state (restarted empty: no marker, while its peers have one) from one that never
-- had any (a new set of masters: none has a marker), so that only the first sits out the restart
-- quarantine (RedisCalls reads it with the uptime, uptime.lua).
-- KEYS[1] the marker (hash: id, created, run = this server's run_id when written, fresh)
-- KEYS[2..] keys that exist only where Lockstep ran before (the jobs' marks)
-- ARGV[1] id  ARGV[2] created (ms)  ARGV[3] 'new' (a new deployment: no master had a marker) | 'copy'
-- A marker is never overwritten. 'fresh' is '1' only for a new deployment's marker written on a
-- server holding none of Lockstep's state: it vouches for this run of the server (its run_id,
-- new at every start) only, since the server had nothing a restart could have lost. A copy, or a
-- marker written where Lockstep had run before (an upgrade), vouches for nothing.
-- Returns the id the server now has.
local id = redis.call('HGET', KEYS[1], 'id')
if id then
  return id
end
local fresh = ARGV[3] == 'new' and '1' or '0'
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    fresh = '0'
  end
end
local run = string.match(redis.call('INFO', 'server'), 'run_id:(%w+)')
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'created', ARGV[2], 'fresh', fresh, 'run', run)
if ARGV[3] ~= 'new' then
  -- A copy: this server had lost its marker (it restarted empty). It vouches for a later restart of
  -- a durable server only once it is older than the quarantine (uptime.lua): by then every record
  -- the server lacked has expired anyway.
  local t = redis.call('TIME')
  redis.call('HSET', KEYS[1], 'copied', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
end
return ARGV[1]
