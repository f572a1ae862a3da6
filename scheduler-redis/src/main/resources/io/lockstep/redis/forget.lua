-- Drops the marks of jobs that no config has stamped for a week (inforce.lua forgot them) from
-- their group's marks, each only if it also decided no slot for as long and holds no lease there:
-- a job still run by workers that do not stamp keeps its marks (they guard its slots).
-- KEYS[1] the group's marks (hash)
-- ARGV[1] keep ms; ARGV[2..] the jobs' field prefixes ('<job>:')
-- Returns how many jobs' marks were dropped.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local keep = tonumber(ARGV[1])
local names = {'decided', 'started', 'holder', 'until', 'owner', 'closed', 'fence', 'kept', 'mkept', 'turn', 'bf', 'bftoken'}
local dropped = 0
for i = 2, #ARGV do
  local f = ARGV[i]
  local marks = redis.call('HMGET', KEYS[1], f .. 'decided', f .. 'until')
  local decided = tonumber(marks[1] or '0') or 0
  local lease_end = tonumber(marks[2] or '0') or 0
  if now - decided > keep and lease_end < now then
    local fields = {}
    for k, name in ipairs(names) do
      fields[k] = f .. name
    end
    redis.call('HDEL', KEYS[1], unpack(fields))
    dropped = dropped + 1
  end
end
return dropped
