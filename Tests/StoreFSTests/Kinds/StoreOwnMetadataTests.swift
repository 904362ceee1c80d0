import EmbeddedKernel
import Foundation
import ObjectGraph
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// The store's own metadata (its type and UUID, Core Data's bookkeeping, the model storefs keeps)
/// is refused set or removed through the mount root, by the rules `storefs apply` asks too
/// (``ChangeRules``): `setfattr -x user.StoreFSModel` lost the kept model at the next open.
@Suite struct StoreOwnMetadataTests {
    @Test(arguments: ["StoreFSModel", "NSStoreModelVersionHashes", "NSStoreUUID", "NSStoreType", "StoreFSKeys"])
    func theStoresOwnMetadataIsRefusedSetOrRemoved(key: String) throws {
        #expect(ChangeRules.metadataRefusal(key) != nil)
        let mount = try KernelMount()
        let k = mount.kernel
        #expect(errnoOf { try k.setxattr("", "user.\(key)", Data("x".utf8)) } == EPERM)
        #expect(errnoOf { try k.removexattr("", "user.\(key)") } == EPERM)
        #expect(errnoOf { try k.setxattr("", "user.reviewer", Data("Ada".utf8)) } == nil)
        #expect(errnoOf { try k.removexattr("", "user.reviewer") } == nil)
        #expect(mount.finish().isEmpty)
    }

    @Test(arguments: [("p1", true), ("p4294967295", true), ("p4294967296", false), ("p9223372036854775807", false)])
    func keysAMountCanShow(name: String, allowed: Bool) throws {
        #expect((ChangeRules.keyRefusal(PrimaryKey(reference: name)) == nil) == allowed)
    }
}
