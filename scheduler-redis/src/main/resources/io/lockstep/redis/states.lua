-- What the records of slots say, for a worker that stepped aside for them: per slot the record's
-- state ('' if none) and the slot's lease end in the running index (server ms, 0 if not there).
-- One call may carry many slots (see claim.lua). Per slot i (0-based): KEYS[2i+1] slot record,
-- KEYS[2i+2] running index; ARGV[i+1] slot (epoch ms). Returns {state, lease end, state, lease end, ...}.
local reply = {}
for i = 0, #KEYS / 2 - 1 do
  reply[2 * i + 1] = redis.call('HGET', KEYS[2 * i + 1], 'state') or ''
  reply[2 * i + 2] = tonumber(redis.call('ZSCORE', KEYS[2 * i + 2], ARGV[i + 1]) or '0')
end
return reply
