-- Takes one permit of a semaphore of n permits on one server, if one is free and no earlier waiter
-- is owed it. Each permit i is a lock of its own (its key holds the owner token with the lease as
-- its ttl; its fence counter beside it), so extend and release are the lock API's scripts; all of a
-- semaphore's keys share one hash tag.
-- Waiters: a caller that names itself (ARGV[4]) joins the queue (KEYS[1], by priority: the slot's
-- time for the scheduler, the first try's server time for acquire()), kept alive by its tries
-- (KEYS[2]: its expiry); it gets a permit only while fewer waiters come before it than permits are
-- free, so permits go in priority order. An anonymous try (tryAcquire) comes after every waiter.
-- KEYS[1] waiters (zset: id -> priority)  KEYS[2] their expiry (zset: id -> server ms)
-- KEYS[3], KEYS[4], ... permit i, its fence counter (i = 1..n)
-- ARGV[1] owner token (the same on every try of one caller: a try repeated after a lost reply gets the
-- permit it took)  ARGV[2] lease (ms)  ARGV[3] fence counter ttl (ms)  ARGV[4] waiter id ('' none)
-- ARGV[5] priority (ms; -1: now, kept from the first try)  ARGV[6] waiter ttl (ms)  ARGV[7] where to start
-- looking among the free permits (spreads the permits used)
-- Returns {permit index (0-based), fencing token} or {-1, the number of waiters before this one}.
--! include fence.lua

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local micros = tonumber(t[1]) * 1000000 + tonumber(t[2])
local n = (#KEYS - 2) / 2
local waiter = ARGV[4]

for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)) do -- waiters that stopped asking
  redis.call('ZREM', KEYS[1], gone)
  redis.call('ZREM', KEYS[2], gone)
end
local free = {}
for i = 1, n do
  local owner = redis.call('GET', KEYS[1 + 2 * i])
  if owner == ARGV[1] then
    -- This caller's own, taken by a try whose reply was lost (or that a client re-sent): the same permit.
    if waiter ~= '' then
      redis.call('ZREM', KEYS[1], waiter)
      redis.call('ZREM', KEYS[2], waiter)
    end
    return {i - 1, tonumber(redis.call('GET', KEYS[2 + 2 * i]) or '0')}
  elseif not owner then
    free[#free + 1] = i
  end
end
local before = 0
if waiter ~= '' then
  local priority = tonumber(ARGV[5])
  redis.call('ZADD', KEYS[1], 'NX', priority < 0 and now or priority, waiter)
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[6]), waiter)
  before = -1
  for i, w in ipairs(redis.call('ZRANGE', KEYS[1], 0, #free)) do
    if w == waiter then
      before = i - 1
      break
    end
  end
  if before < 0 then
    before = #free + 1 -- further back than the free permits reach
  end
else
  before = #redis.call('ZRANGE', KEYS[1], 0, #free) -- every live waiter (as many as could matter)
end
if before < #free then
  local i = free[(tonumber(ARGV[7]) % #free) + 1]
  redis.call('SET', KEYS[1 + 2 * i], ARGV[1], 'PX', ARGV[2])
  local fence = next_fence(KEYS[2 + 2 * i], ARGV[3], micros)
  if waiter ~= '' then
    redis.call('ZREM', KEYS[1], waiter)
    redis.call('ZREM', KEYS[2], waiter)
  end
  return {i - 1, fence}
end
redis.call('PEXPIRE', KEYS[1], 86400000)
redis.call('PEXPIRE', KEYS[2], 86400000)
return {-1, before}
