-- Gives a lease back and turns the slot record into a done marker, each only if the token owns it.
-- The record is kept (with its ttl), never deleted, so a late worker cannot run the slot again. A
-- run that was replaced, recovered by another worker or abandoned no longer owns its record, so
-- its outcome never overwrites a newer one.
-- KEYS[1] slot record  KEYS[2] lease  KEYS[3] running index  ARGV[1] owner token  ARGV[2] outcome
-- ARGV[3] slot (epoch ms)
if redis.call('GET', KEYS[2]) == ARGV[1] then
  redis.call('DEL', KEYS[2])
end
local record = redis.call('HMGET', KEYS[1], 'token', 'state')
if record[1] ~= ARGV[1] or record[2] ~= 'running' then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'done', 'outcome', ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[3])
return 1
