import FuseKit
import ObjectGraph
import Testing

@testable import StoreFS

/// Listings of directories read without opendir (read-only mounts) are shared until the store
/// changes; one taken before a change must not be kept after it.
@Suite struct DirectoryHandlesTests {
    let directory = Node.entity(EntityID(1)).inode
    let before = DirectoryHandles.Listing.names([("old", Node.entity(EntityID(1)))])

    func names(_ listing: DirectoryHandles.Listing?) -> [String]? {
        guard case .names(let entries) = listing else { return nil }
        return entries.map(\.0)
    }

    @Test func aListingTakenBeforeAChangeIsNotKept() {
        let handles = DirectoryHandles()
        let taken = handles.generation
        handles.dropUnopened()  // another process committed while the listing was taken
        #expect(names(handles.keep(before, for: DirectoryHandles.unopened, of: directory, takenIn: taken)) == ["old"])
        #expect(handles.kept(DirectoryHandles.unopened, of: directory) == nil, "the next read takes it again")
    }

    @Test func aListingTakenAfterTheChangeIsSharedUntilTheNext() {
        let handles = DirectoryHandles()
        handles.dropUnopened()
        _ = handles.keep(before, for: DirectoryHandles.unopened, of: directory, takenIn: handles.generation)
        #expect(names(handles.kept(DirectoryHandles.unopened, of: directory)) == ["old"])
        handles.dropUnopened()
        #expect(handles.kept(DirectoryHandles.unopened, of: directory) == nil)
    }

    @Test func anOpenedDirectoryKeepsItsListingWhateverChanged() {
        let handles = DirectoryHandles()
        let handle = handles.open()
        let taken = handles.generation
        handles.dropUnopened()
        _ = handles.keep(before, for: handle, of: directory, takenIn: taken)
        #expect(names(handles.kept(handle, of: directory)) == ["old"], "one open reads one consistent listing")
    }
}
