-- Redlock: an operator's command about one job (pause or resume) on one master, newest first. Each
-- master keeps the latest command it was given per job in a registry, so that masters an operator's
-- command missed (down or unreachable at the time) can be brought to it later: the workers'
-- heartbeat sends every master the newest command any master has (RedlockMembers).
-- KEYS[1] the job's pause (hash; exists while the job is paused: what claim.lua reads)
-- KEYS[2] the registry (hash: job -> the latest command, JSON)
-- ARGV[1] job  ARGV[2] the command, JSON: {"at": ms (the time it was given, by a majority of the
-- masters' clocks), "state": "paused" | "resumed", "note", "by", "until": ms (0: until resumed)}
-- Returns {1 if applied (0: this master already has a newer command, or this one), 1 if the job
-- was paused here before}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local was = redis.call('EXISTS', KEYS[1])
local command = cjson.decode(ARGV[2])
local current = redis.call('HGET', KEYS[2], ARGV[1])
if current == ARGV[2] then
  return {1, was} -- this very command is here already (a heartbeat passed it on first)
end
if current then
  local c = cjson.decode(current)
  if c.at > command.at or (c.at == command.at and current > ARGV[2]) then
    return {0, was}
  end
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('DEL', KEYS[1])
local ends = tonumber(command['until'])
if command.state == 'paused' and (ends == 0 or ends > now) then
  redis.call('HSET', KEYS[1], 'note', command.note, 'by', command.by, 'at', string.format('%.0f', command.at))
  if ends > 0 then
    redis.call('PEXPIRE', KEYS[1], ends - now)
  end
end
return {1, was}
