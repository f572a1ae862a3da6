-- The runs of one job in flight: which lost their lease without an outcome (by the server's clock),
-- and when the earliest of the others will, unless renewed.
-- KEYS[1] running index (zset: slot -> lease end, server ms)  ARGV[1] at most this many expired slots
-- Returns {earliest lease end still ahead (server ms, 0 if none), expired slot, expired slot, ...}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- An entry is expired 2 ms past its score, as recover.lua counts it: an allow run's lease key written
-- beside it (PX ttl, in the same call) can outlive the score by a millisecond, since Redis expires a
-- key only once the millisecond clock frozen at a script's start is past it, while 'now' here is read
-- from TIME. (An exclusive job's lease, in the marks, ends at the score itself: lease.lua.)
local dead = now - 2
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', dead, 'LIMIT', 0, tonumber(ARGV[1]))
local ahead = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. dead, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local reply = {tonumber(ahead[2] or '0')}
for _, slot in ipairs(expired) do
  reply[#reply + 1] = slot
end
return reply
