-- Redlock: gives back what a claim that did not reach a quorum wrote on one node, so that the slot
-- can be decided again: the slot record while this token owns it (mode 'all': in any state but
-- done; mode 'running': only while running, so a decision a quorum made stays), the lease (only if
-- this token holds it) and the slot's entry in the running index. The marks (watermarks) stay;
-- they only ever move forward.
-- KEYS[1] slot record  KEYS[2] lease  KEYS[3] running index
-- ARGV[1] owner token  ARGV[2] slot (epoch ms)  ARGV[3] all | running
-- Returns 1 when something of this token's was given back, 0 otherwise.
local released = 0
local r = redis.call('HMGET', KEYS[1], 'token', 'state')
if r[1] == ARGV[1] and r[2] ~= 'done' and (ARGV[3] == 'all' or r[2] == 'running') then
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
