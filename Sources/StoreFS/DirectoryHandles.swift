import FuseKit
import ObjectGraph
import Synchronization

/// Listings of open directories, taken once per opendir so that a listing read in many
/// readdirplus calls is consistent and costs one ID query, not one per call.
final class DirectoryHandles: Sendable {
    /// What an open directory lists.
    enum Listing: Sendable {
        /// An entity directory: the objects of the entity and its subentities, by key, and how many
        /// of them have had their rows fetched.
        case objects([ObjectID], prefetched: Int)
        /// Any other directory: its entries, in listing order.
        case names([(String, Node)])
    }

    private struct State {
        var next: UInt64 = 1
        var listings: [UInt64: Listing?] = [:]
    }

    private let state = Mutex(State())

    func open() -> FuseKit.FileHandle {
        state.withLock { state in
            let handle = state.next
            state.next += 1
            state.listings[handle] = .some(nil)
            return FuseKit.FileHandle(handle)
        }
    }

    func listing(_ handle: FuseKit.FileHandle) -> Listing? {
        state.withLock { $0.listings[handle.rawValue] ?? nil }
    }

    func setListing(_ listing: Listing, for handle: FuseKit.FileHandle) {
        state.withLock { $0.listings[handle.rawValue] = .some(listing) }
    }

    func close(_ handle: FuseKit.FileHandle) {
        _ = state.withLock { $0.listings.removeValue(forKey: handle.rawValue) }
    }
}
