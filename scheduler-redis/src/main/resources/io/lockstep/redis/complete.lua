-- Gives a lease back and turns the slot record into a done marker, each only if the token owns it.
-- The record is kept (with its ttl), never deleted, so a late worker cannot run the slot again.
-- KEYS[1] slot record   KEYS[2] lease   ARGV[1] owner token   ARGV[2] outcome
if redis.call('GET', KEYS[2]) == ARGV[1] then
  redis.call('DEL', KEYS[2])
end
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'done', 'outcome', ARGV[2])
return 1
