-- (Included where a script says '--! include lease.lua'.) A run's lease: who holds it and until when.
-- An overlap: allow run's lease is a string key of its own (the owner token, PX its ttl). An
-- exclusive job's (overlap: skip, replace: one run at a time) is two fields of its group's marks
-- (key layout 3): '<job>:owner', the token, and '<job>:until', when it ends (server ms), held while
-- 'until' is ahead of the script's clock. The marks are read and written by every claim and outcome
-- anyway, so the lease costs them no command of its own, and the lease end a peer reads to know
-- when to look for a dead run is the lease itself, not a copy of it.
-- Each function takes the lease's key and 'f': the job's field prefix in the marks ('<job>:') for an
-- exclusive job, whose lease key is then its group's marks, or '' for a run's own string key.
-- 'now' is the caller's server clock (ms). The caller gives the marks their ttl, as it does anyway.

-- The rule, for an owner and an end read from the marks (by a caller that read them with others):
-- the owner holds the lease while its end is ahead of now. Returns the owner, or false.
local function held_by(owner, ends, now)
  if owner and owner ~= '' and tonumber(ends or '0') > now then
    return owner
  end
  return false
end

local function lease_owner(key, f, now)
  if f == '' then
    return redis.call('GET', key)
  end
  local v = redis.call('HMGET', key, f .. 'owner', f .. 'until')
  return held_by(v[1], v[2], now)
end

-- When the lease ends (server ms), whoever holds it; 0 when nobody does.
local function lease_end(key, f, now)
  if f == '' then
    local ttl = redis.call('PTTL', key)
    return ttl > 0 and now + ttl or 0
  end
  local v = redis.call('HMGET', key, f .. 'owner', f .. 'until')
  return held_by(v[1], v[2], now) and tonumber(v[2]) or 0
end

-- The lease taken (or kept) by 'token' for 'ttl' ms from now.
local function lease_take(key, f, token, ttl, now)
  if f == '' then
    redis.call('SET', key, token, 'PX', ttl)
  else
    redis.call('HSET', key, f .. 'owner', token, f .. 'until', string.format('%.0f', now + ttl))
  end
end

-- The lease's end moved to 'ttl' ms from now (its owner checked by the caller).
local function lease_extend(key, f, ttl, now)
  if f == '' then
    redis.call('PEXPIRE', key, ttl)
  else
    redis.call('HSET', key, f .. 'until', string.format('%.0f', now + ttl))
  end
end

-- The lease given up (its owner checked by the caller). In the marks, 'until' stays: peers read it
-- as the end of the job's last claim (it is over either way).
local function lease_drop(key, f)
  if f == '' then
    redis.call('DEL', key)
  else
    redis.call('HDEL', key, f .. 'owner')
  end
end

-- The job's 'holder' and 'until' marks (what peers read to know when to look for a dead run), written
-- for a run whose lease is NOT in the marks (overlap: allow). A rollout that changes a job's overlap
-- runs both kinds side by side, so this never writes over an exclusive lease that another token
-- holds ('owner' with 'until' ahead: it would move that lease), and drops an exclusive owner whose
-- lease is over in the same HSET (so that this 'until' cannot revive it). 'owner' and 'ends' as
-- read by the caller if it has them (else nil: read here). Returns whether it wrote.
local function allow_marks(key, f, slot_text, ends, now, owner, owner_until)
  if owner == nil then
    local v = redis.call('HMGET', key, f .. 'owner', f .. 'until')
    owner, owner_until = v[1], v[2]
  end
  if owner and owner ~= '' then
    if held_by(owner, owner_until, now) then
      return false
    end
    redis.call('HSET', key, f .. 'holder', slot_text, f .. 'until', string.format('%.0f', ends), f .. 'owner', '')
  else
    redis.call('HSET', key, f .. 'holder', slot_text, f .. 'until', string.format('%.0f', ends))
  end
  return true
end
