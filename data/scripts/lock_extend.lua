-- lock_extend.lua: give a held lock a new TTL, only by its owner (a watchdog for long jobs).
--
-- KEYS[1]  lock key, e.g. lock:{invoice:88}
-- ARGV[1]  owner token given to lock_acquire.lua
-- ARGV[2]  new time to live in ms, counted from now, >= 1
--
-- Returns 1 if the TTL was set, 0 if the caller does not hold the lock (too late: it
-- expired, maybe taken by someone else, who keeps it untouched).
-- Errors: "ERR ..." for bad arguments.
--
-- redis-cli --eval data/scripts/lock_extend.lua lock:{invoice:88} , 6f1c2a1e-worker-3 30000

local ttl = tonumber(ARGV[2])
if not ttl or ttl < 1 or ttl % 1 ~= 0 then
  return redis.error_reply('ERR lock ttl must be a positive integer (ms)')
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ttl)
  return 1
end
return 0
