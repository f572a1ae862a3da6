-- Redlock: gives back what a claim that did not reach a quorum wrote on one node, so that the slot
-- can be decided again: the slot record (only while this token owns it and it is not done), the
-- lease (only if this token holds it) and the slot's entry in the running index. The marks
-- (watermarks) stay; they only ever move forward.
-- KEYS[1] slot record  KEYS[2] lease  KEYS[3] running index  ARGV[1] owner token  ARGV[2] slot (epoch ms)
-- Returns 1 when something of this token's was given back, 0 otherwise.
local released = 0
local r = redis.call('HMGET', KEYS[1], 'token', 'state')
if r[1] == ARGV[1] and r[2] ~= 'done' then
  redis.call('DEL', KEYS[1])
  released = 1
end
if redis.call('GET', KEYS[2]) == ARGV[1] then
  redis.call('DEL', KEYS[2])
  redis.call('ZREM', KEYS[3], ARGV[2])
  released = 1
elseif released == 1 then
  redis.call('ZREM', KEYS[3], ARGV[2])
end
return released
