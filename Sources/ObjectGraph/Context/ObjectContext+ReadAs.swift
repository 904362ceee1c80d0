import Foundation

/// Values set as changes of what their writer read: the filesystem's close-to-open contract on a
/// store other machines write too. A process that opened a file, read 25 and writes 26 changed
/// 25, whatever the mount has learnt since; the save then finds the conflict when the store
/// holds anything but 25 (another machine's 26), instead of taking 26 as a change of that 26.
extension ObjectContext {
    /// Sets attribute `name` of `id` as ``setValue(_:of:for:)`` does, as a change of `readAs`, the
    /// value its writer read: when this context has no pending change of that attribute yet, the
    /// value it was read as (what a save checks the store against) is `readAs`. A pending change
    /// of it (another writer of this context) keeps the value read then.
    public func setValue(_ value: AttributeValue?, of name: String, for id: ObjectID, readAs expected: AttributeValue?)
        throws(ObjectGraphError)
    {
        try check(value, of: name, for: id)
        try change { () throws(ObjectGraphError) in
            let untouched = state.withLock { state in
                state.pending[id].map { $0.snapshot.attributes[name] == $0.original.attributes[name] } ?? true
            }
            try modify(id) { pending in
                pending.snapshot.attributes[name] = value
                if untouched && !pending.isInserted { pending.original.attributes[name] = expected }
            }
        }
    }
}
