import CFuse
import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// FUSE passthrough (Linux 6.9+, libfuse 3.18's backing files, as libfuse's example
/// passthrough_hp uses them): an open whose ``OpenResult/backingFile`` names a descriptor is
/// answered with a backing id, and the kernel then reads that file itself; no READ reaches the
/// server.
///
/// The kernel allows one backing file per FUSE inode at a time (a second, different one makes
/// the open fail with EBUSY), so opens of one inode share one backing id while they show the
/// same file, and an open of another file (a value replaced while an older reader still reads)
/// is served by READ requests instead. The id is closed when the last open using it is released.
///
/// Where the kernel did not offer passthrough at INIT, or registering a backing file fails (it
/// needs CAP_SYS_ADMIN), opens are served by READ requests as before and the log says so once.
///
/// Threading: one lock, held only to look up and count.
final class PassthroughFiles: Sendable {
    /// The kernel offered FUSE_CAP_PASSTHROUGH and it was asked for. Set during INIT.
    let isOn = Atomic<Bool>(false)
    private let saidUnavailable = Atomic<Bool>(false)
    private let saidInUse = Atomic<Bool>(false)

    private struct Backing {
        var id: Int32
        var device: UInt64
        var fileNumber: UInt64
        var opens: Int
    }

    private struct State {
        var byInode: [UInt64: Backing] = [:]
        /// The inode whose backing id each open handle uses.
        var handles: [UInt64: UInt64] = [:]
    }

    private let state = Mutex(State())

    /// Sets `info`'s backing id for `descriptor` when passthrough is on; whether it did.
    func attach(
        _ descriptor: Int32, inode: UInt64, to info: UnsafeMutablePointer<fuse_file_info>, request: fuse_req_t?,
        logger: Logger, mountPoint: String
    ) -> Bool {
        guard isOn.load(ordering: .relaxed) else {
            sayUnavailable(
                "the kernel did not offer FUSE passthrough at INIT (it needs Linux 6.9 or later)", logger, mountPoint)
            return false
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return false }
        let device = UInt64(status.st_dev)
        let fileNumber = UInt64(status.st_ino)
        let handle = info.pointee.fh
        let id: Int32? = state.withLock { state in
            if var backing = state.byInode[inode] {
                guard backing.device == device, backing.fileNumber == fileNumber else { return nil }
                backing.opens += 1
                state.byInode[inode] = backing
                state.handles[handle] = inode
                return backing.id
            }
            // Registered under the lock: another open of the inode must not register a second one.
            let id = fuse_passthrough_open(request, descriptor)
            guard id > 0 else { return -1 }
            state.byInode[inode] = Backing(id: id, device: device, fileNumber: fileNumber, opens: 1)
            state.handles[handle] = inode
            return id
        }
        guard let id else { return false }
        guard id > 0 else {
            sayUnavailable(
                "registering a backing file failed (FUSE_DEV_IOC_BACKING_OPEN needs CAP_SYS_ADMIN; libfuse's message is on stderr)",
                logger, mountPoint)
            return false
        }
        info.pointee.backing_id = id
        info.pointee.direct_io = 0
        info.pointee.keep_cache = 0
        if !saidInUse.exchange(true, ordering: .relaxed) {
            logger.info(
                "FUSE passthrough in use on \(mountPoint): the kernel reads values kept in files from those files")
        }
        return true
    }

    /// The open `handle` was released: its backing id goes with the last open using it.
    func release(_ handle: UInt64, request: fuse_req_t?) {
        let closing: Int32? = state.withLock { state in
            guard let inode = state.handles.removeValue(forKey: handle), var backing = state.byInode[inode] else {
                return nil
            }
            backing.opens -= 1
            guard backing.opens == 0 else {
                state.byInode[inode] = backing
                return nil
            }
            state.byInode[inode] = nil
            return backing.id
        }
        if let closing { _ = fuse_passthrough_close(request, closing) }
    }

    /// The backing id opens of `inode` share now, if any (for tests and the log).
    func backingID(of inode: UInt64) -> Int32? { state.withLock { $0.byInode[inode]?.id } }

    private func sayUnavailable(_ reason: String, _ logger: Logger, _ mountPoint: String) {
        guard !saidUnavailable.exchange(true, ordering: .relaxed) else { return }
        logger.warning(
            "FUSE passthrough unavailable on \(mountPoint): \(reason); values kept in files are read through storefs")
    }
}
