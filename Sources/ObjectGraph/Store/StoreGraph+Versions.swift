extension StoreGraph {
    /// Carries versions and key bookkeeping over from `earlier`, the graph this one replaces after
    /// another process rewrote the file: an object whose stored state is unchanged keeps its
    /// version, a changed one moves past it (XML files hold no versions; a binary file's may not
    /// have moved), and keys handed out from `earlier` stay handed out.
    public mutating func continueVersions(of earlier: StoreGraph) {
        for (id, old) in earlier.snapshots {
            guard var current = snapshots[id] else { continue }
            if current.attributes == old.attributes && current.toOne == old.toOne {
                current.version = old.version
            } else {
                current.version = max(current.version, old.version &+ 1)
            }
            snapshots[id] = current
        }
        for (root, key) in earlier.maxKey where key > (maxKey[root] ?? 0) { maxKey[root] = key }
    }
}
