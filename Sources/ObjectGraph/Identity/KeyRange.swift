/// Handing out primary keys (Core Data's Z_MAX), checked: a store whose highest key is near
/// Int64's limit, or a request for a huge count, fails with a clear error instead of overflowing.
public enum KeyRange {
    /// Reserves `count` keys after `highest` (the highest key handed out so far in the tree of
    /// root entity `rootName`, which names the store too) and reports the new highest through `store`.
    public static func reserve(
        _ count: Int, after highest: Int64, in rootName: String, store: (Int64) -> Void
    ) throws(ObjectGraphError) -> [PrimaryKey] {
        guard count > 0 else { return [] }
        let start = max(highest, 0)
        let (last, overflow) = start.addingReportingOverflow(Int64(count))
        guard !overflow else {
            // No key is left, as no inode is left on a full disk: ENOSPC to whoever asked.
            throw ObjectGraphError(
                .noSpace,
                "\(rootName) has handed out key \(highest); no higher key exists for a new object (name the new "
                    + "object with a free key below it, pN)")
        }
        store(last)
        return (1...Int64(count)).map { PrimaryKey(start + $0) }
    }
}
