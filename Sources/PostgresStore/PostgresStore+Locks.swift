import ObjectGraph

/// File locks held in the server (``AdvisoryLockSession``).
extension PostgresStore: SharedLockingStore {
    public func changeLock(_ name: SharedLockName, from: SharedLockMode?, to: SharedLockMode?)
        throws(ObjectGraphError) -> SharedLockAnswer
    {
        try advisoryLocks.change(name, from: from, to: to)
    }

    public func lockHeldElsewhere(_ name: SharedLockName, excluding mode: SharedLockMode) throws(ObjectGraphError)
        -> SharedLockMode?
    {
        try advisoryLocks.heldElsewhere(name, excluding: mode)
    }
}
