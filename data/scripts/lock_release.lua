-- lock_release.lua: release a lock taken with lock_acquire.lua, only by its owner.
--
-- The check and the delete happen atomically, so a client whose lock already expired
-- (and was taken by someone else) cannot delete the new owner's lock.
--
-- KEYS[1]  lock key, e.g. lock:{invoice:88}
-- ARGV[1]  owner token given to lock_acquire.lua
--
-- Returns 1 if the lock was released, 0 if the caller does not hold it (expired, or held
-- by another owner; the lock is then left untouched).
--
-- redis-cli --eval data/scripts/lock_release.lua lock:{invoice:88} , 6f1c2a1e-worker-3

if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
