-- A run's checkpoint (JobContext.checkpoint), kept in its slot record so that a rerun of the slot
-- (recover.lua keeps the record's other fields) resumes from it. KEYS[1] slot record.
-- ARGV[1] 'save' | 'read'. save: ARGV[2] owner token, ARGV[3] value, ARGV[4] the run's fencing token,
-- ARGV[5] its checkpoint sequence; saved only while the record is that token's running run (not one it
-- handed over, see complete.lua): a run that lost its slot writes nothing. Returns 1 when saved, else 0.
-- read: returns {value, fencing token, sequence}, or {} when none was saved.
if ARGV[1] == 'save' then
  local r = redis.call('HMGET', KEYS[1], 'token', 'state', 'handed')
  if r[1] ~= ARGV[2] or r[2] ~= 'running' or r[3] == ARGV[2] then
    return 0
  end
  redis.call('HSET', KEYS[1], 'checkpoint', ARGV[3], 'checkpoint_by', ARGV[4] .. ':' .. ARGV[5])
  return 1
end
local c = redis.call('HMGET', KEYS[1], 'checkpoint', 'checkpoint_by')
if not c[1] then
  return {}
end
local fence, seq = string.match(c[2] or '', '^(%d+):(%d+)$')
return {c[1], fence or '0', seq or '0'}
