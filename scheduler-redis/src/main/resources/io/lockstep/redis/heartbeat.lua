-- One worker's heartbeat: records it as alive now, forgets workers not heard from within their ttl,
-- keeps this worker's published config alive, and answers who is alive and which manual runs were
-- requested within the last minute.
-- KEYS[1] live workers (hash: id -> JSON)  KEYS[2] last seen (zset: id -> server ms)
-- KEYS[3] the config this worker published (hash: job -> JSON)
-- KEYS[4] manual runs requested (zset: '<job> <slot ms>' -> slot ms)
-- KEYS[5] Redlock: the operator commands this master was given (hash: job -> JSON, see operator.lua)
-- KEYS[6] Redlock: the deployment marker (hash, see marker.lua)
-- KEYS[7] drain requests (hash: worker id -> how long it may take, ms; lockstep drain): this worker's
-- is answered once and removed, so that a worker restarted under the same id is not drained again
-- KEYS[8] backfills (hash: job -> request JSON, '<job>:progress' -> JSON; lockstep backfill), read whole
-- ARGV[1] worker id  ARGV[2] its JSON  ARGV[3] ttl (ms): the same for every caller (WorkerInfo.HEARTBEAT_TTL),
-- since each call ages out everyone not seen within it
-- Returns {server ms, 1 if KEYS[3] exists else 0, {id, JSON, id, JSON, ...}, {id, last seen, ...},
-- {'<job> <slot ms>', ...}, {job, command, job, command, ...}, the marker's id or '', the drain asked of
-- this worker (ms) or '', the backfills (HGETALL)}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], now, ARGV[1])
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. (now - ttl))
if #gone > 0 then
  redis.call('HDEL', KEYS[1], unpack(gone))
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. (now - ttl))
end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
local published = redis.call('PEXPIRE', KEYS[3], ttl)
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', '(' .. (now - 60000))
local drain = redis.call('HGET', KEYS[7], ARGV[1])
if drain then
  redis.call('HDEL', KEYS[7], ARGV[1])
end
return {now, published, redis.call('HGETALL', KEYS[1]), redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES'),
    redis.call('ZRANGE', KEYS[4], 0, -1), redis.call('HGETALL', KEYS[5]), redis.call('HGET', KEYS[6], 'id') or '', drain or '',
    redis.call('HGETALL', KEYS[8])}
