import FuseKit
import ObjectGraph
import StoreFS

/// `-o` options split into storefs's own and libfuse's, as mount(8) passes them.
///
/// storefs's: `ro`/`rw`, `evidence`, `list_fetched`, `model=PATH`, `metrics=ADDR:PORT`, `commit_delay=SECONDS`, `cache_size=MiB`,
/// `batch_size=N`, `max_value_size=MiB`, `query_time=SECONDS`, `query_rows=N`, `query_memory=MiB`,
/// `allow_other`, `auto_unmount`/`noauto_unmount`. Numbers
/// are checked against sane bounds, so no option can make the server overflow or allocate wildly. mount(8)'s own (`defaults`,
/// `_netdev`, `nofail`, `noauto`, `user`, `users`, `x-*`, `comment=*`) are ignored. Anything else
/// goes to libfuse.
struct MountConfiguration {
    var mount = MountOptions()
    var fileSystem = StoreFSConfiguration()
    var engine = EngineConfiguration()
    var model: String?
    /// `-o evidence`: open the store as evidence (``EvidenceStore``); edits go to an overlay.
    var evidence = false
    /// `-o metrics=ADDR:PORT` (or `--metrics`): serve Prometheus metrics there (``MountMetrics``).
    var metrics: MetricsAddress?

    init(options: [String]) throws {
        for option in options.flatMap({ $0.split(separator: ",").map(String.init) }) where !option.isEmpty {
            let parts = option.split(separator: "=", maxSplits: 1).map(String.init)
            let name = parts[0]
            let value = parts.count > 1 ? parts[1] : nil
            switch name {
            case "ro": mount.readOnly = true
            case "rw": mount.readOnly = false
            case "list_fetched": fileSystem.listsFetchedProperties = true
            case "evidence": evidence = true
            case "allow_other": mount.allowOther = true
            case "auto_unmount": mount.autoUnmount = true
            case "noauto_unmount": mount.autoUnmount = false
            case "model": model = try Self.required(value, name)
            case "metrics": metrics = try MetricsAddress(parsing: try Self.required(value, name))
            case "commit_delay":
                guard let seconds = Double(try Self.required(value, name)), seconds >= 0, seconds <= 3600 else {
                    throw MountOptionError(
                        "commit_delay needs a number of seconds from 0 to 3600, e.g. commit_delay=0.5")
                }
                fileSystem.commitDelay = seconds
            case "cache_size":
                guard let mib = Int(try Self.required(value, name)), mib > 0, mib <= 1 << 20 else {
                    throw MountOptionError("cache_size needs a size in MiB from 1 to 1048576, e.g. cache_size=256")
                }
                engine.rowCacheLimit = mib << 20
            case "batch_size":
                guard let n = Int(try Self.required(value, name)), n > 0, n <= 100_000 else {
                    throw MountOptionError("batch_size needs a number from 1 to 100000")
                }
                engine.batchSize = n
            case "max_value_size":
                guard let mib = Int(try Self.required(value, name)), mib > 0, mib <= 4096 else {
                    throw MountOptionError("max_value_size needs a size in MiB from 1 to 4096, e.g. max_value_size=256")
                }
                fileSystem.maximumValueSize = mib << 20
            case "query_time", "query_rows", "query_memory":
                try Self.setQueryLimit(name, try Self.required(value, name), in: &fileSystem.queryLimits)
            case "defaults", "_netdev", "nofail", "noauto", "auto", "user", "users", "nouser", "exec", "noexec",
                "suid", "nosuid", "dev", "nodev", "atime", "noatime", "relatime", "sync", "async":
                continue
            default:
                if name.hasPrefix("x-") || name.hasPrefix("comment=") || name == "comment" { continue }
                mount.extraOptions.append(option)
            }
        }
        fileSystem.readOnly = mount.readOnly
        // Files of a read-only mount need no per-open state (no buffers): let the kernel open them
        // without asking, so `cat` costs one READ instead of OPEN, READ, FLUSH and RELEASE.
        mount.opensWithoutRequests = mount.readOnly
        // Its links change only by other processes' commits, whose refresh drops them: the kernel
        // may keep link targets, so a warm `ls -l` asks for none.
        mount.cachesLinkTargets = mount.readOnly
    }

    /// The settings in effect, for the log: `read-write, commit_delay 0.2 s, ...`.
    var summary: String {
        var parts = [mount.readOnly ? "read-only" : "read-write"]
        if evidence { parts.append("evidence (edits to an overlay in memory)") }
        parts.append("commit_delay \(fileSystem.commitDelay) s")
        parts.append("cache_size \(engine.rowCacheLimit >> 20) MiB")
        parts.append("batch_size \(engine.batchSize)")
        let limits = fileSystem.queryLimits
        parts.append(
            "query_time \(limits.time) s, query_rows \(limits.rowsVisited), query_memory \(limits.memory >> 20) MiB")
        if fileSystem.listsFetchedProperties { parts.append("list_fetched") }
        parts.append(mount.allowOther ? "allow_other" : "owner only")
        parts.append(mount.autoUnmount ? "auto_unmount" : "noauto_unmount")
        if let model { parts.append("model \(model)") }
        if let metrics { parts.append("metrics at \(metrics)") }
        if !mount.extraOptions.isEmpty { parts.append("libfuse -o \(mount.extraOptions.joined(separator: ","))") }
        return parts.joined(separator: ", ")
    }

    /// Sets `query_time`, `query_rows` or `query_memory` (the names `storefs export` takes too) in
    /// `limits`, checked: seconds from 0.001 to a day, rows from 1 to 10^12, MiB from 1 to 1 TiB.
    static func setQueryLimit(_ name: String, _ value: String, in limits: inout QueryLimits) throws {
        switch name {
        case "query_time":
            guard let seconds = Double(value), seconds >= 0.001, seconds <= 86_400 else {
                throw MountOptionError("query_time needs a number of seconds from 0.001 to 86400, e.g. query_time=30")
            }
            limits.time = seconds
        case "query_rows":
            guard let rows = Int(value), rows >= 1, rows <= 1_000_000_000_000 else {
                throw MountOptionError("query_rows needs a number from 1 to 1000000000000, e.g. query_rows=50000000")
            }
            limits.rowsVisited = rows
        default:
            guard let mib = Int(value), mib >= 1, mib <= 1 << 20 else {
                throw MountOptionError("query_memory needs a size in MiB from 1 to 1048576, e.g. query_memory=1024")
            }
            limits.memory = mib << 20
        }
    }

    private static func required(_ value: String?, _ name: String) throws -> String {
        guard let value, !value.isEmpty else { throw MountOptionError("-o \(name) needs a value: \(name)=...") }
        return value
    }
}

struct MountOptionError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
