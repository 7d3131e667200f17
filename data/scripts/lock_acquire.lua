-- lock_acquire.lua: take a lock for TTL ms on behalf of an owner token.
--
-- The lock is a plain string key holding the owner's token, set with SET NX PX so it
-- frees itself if the owner dies. The token must be unique per owner and attempt (e.g. a
-- random UUID): it is what lock_release.lua and lock_extend.lua check. Acquiring again
-- with the token that already holds the lock succeeds and restarts its TTL, so a client
-- may safely retry an acquire whose reply it lost.
--
-- KEYS[1]  lock key, e.g. lock:{invoice:88}
-- ARGV[1]  owner token
-- ARGV[2]  lock time to live in ms, >= 1
--
-- Returns {1, ttl_ms} when the caller now holds the lock,
--         {0, ttl_ms} when someone else holds it (ttl_ms = time until it expires at the
--         latest, a hint for when to retry).
-- Errors: "ERR ..." for bad arguments.
--
-- redis-cli --eval data/scripts/lock_acquire.lua lock:{invoice:88} , 6f1c2a1e-worker-3 30000

local key, token = KEYS[1], ARGV[1]
local ttl = tonumber(ARGV[2])
if not token or token == '' then
  return redis.error_reply('ERR owner token is required')
end
if not ttl or ttl < 1 or ttl % 1 ~= 0 then
  return redis.error_reply('ERR lock ttl must be a positive integer (ms)')
end

if redis.call('SET', key, token, 'NX', 'PX', ttl) then
  return {1, ttl}
end
if redis.call('GET', key) == token then
  redis.call('PEXPIRE', key, ttl)
  return {1, ttl}
end
return {0, redis.call('PTTL', key)}
