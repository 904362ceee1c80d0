import FuseKit
import ObjectGraph
import Synchronization

/// Listings of open directories, taken once per opendir so that a listing read in many
/// readdirplus calls is consistent and costs one ID query, not one per call.
///
/// Read-only mounts open directories without a request (zero-message opendir): their reads come
/// with handle 0 and no release follows. Those listings are kept per directory instead, shared by
/// every process reading it, until the store changes (``dropUnopened()``), and only the latest few
/// hundred directories' (a tool reads a directory to its end before the next, so an older one is
/// rarely still being read; if it is, its next call takes the listing again).
final class DirectoryHandles: Sendable {
    /// What an open directory lists.
    enum Listing: Sendable {
        /// An entity directory: the objects of the entity and its subentities, by key.
        case objects(EntityListing)
        /// Any other directory: its entries, in listing order.
        case names([(String, Node)])
    }

    /// The handle of a directory read without opendir.
    static let unopened = FuseKit.FileHandle(0)
    /// Unopened listings kept at most; beyond, the oldest are dropped.
    private static let unopenedLimit = 256

    private struct State {
        var next: UInt64 = 1
        var listings: [UInt64: Listing?] = [:]
        var unopened: [InodeNumber: Listing] = [:]
        var unopenedOrder: [InodeNumber] = []
        /// Moved by every ``dropUnopened()``: a listing taken before it is not kept.
        var generation: UInt64 = 0
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

    func kept(_ handle: FuseKit.FileHandle, of directory: InodeNumber) -> Listing? {
        state.withLock { state in
            if handle == Self.unopened { return state.unopened[directory] }
            return state.listings[handle.rawValue] ?? nil
        }
    }

    /// The generation to give ``keep(_:for:of:takenIn:)`` for a listing taken from now.
    var generation: UInt64 { state.withLock { $0.generation } }

    /// Keeps `listing` for the reads that follow; returns it. A listing read without opendir is
    /// not kept when the store changed since `generation` was read: taken before the change, it
    /// would be served after it until the next one.
    func keep(_ listing: Listing, for handle: FuseKit.FileHandle, of directory: InodeNumber, takenIn generation: UInt64)
        -> Listing
    {
        state.withLock { state in
            guard handle == Self.unopened else {
                state.listings[handle.rawValue] = .some(listing)
                return listing
            }
            guard state.generation == generation else { return listing }
            if state.unopened.updateValue(listing, forKey: directory) == nil {
                state.unopenedOrder.append(directory)
                if state.unopenedOrder.count > Self.unopenedLimit {
                    state.unopened.removeValue(forKey: state.unopenedOrder.removeFirst())
                }
            }
            return listing
        }
    }

    /// The store changed: listings read without opendir are taken again by their next read.
    func dropUnopened() {
        state.withLock { state in
            state.generation &+= 1
            state.unopened.removeAll()
            state.unopenedOrder.removeAll()
        }
    }

    func close(_ handle: FuseKit.FileHandle) {
        _ = state.withLock { $0.listings.removeValue(forKey: handle.rawValue) }
    }
}
