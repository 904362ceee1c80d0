// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "storefs",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "storefs", targets: ["storefs"]),
        .library(name: "ObjectGraph", targets: ["ObjectGraph"])
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // Mount metrics: FuseKit and StoreFS record through swift-metrics' API (a factory passed
        // in, no global bootstrap); the storefs executable serves them as Prometheus text.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1")
    ],
    targets: [
        // libfuse 3.18.3 from Debian's source package (Vendor/libfuse/README.md): FUSE over io_uring,
        // which Debian 12's libfuse 3.14 lacks. Linked statically; CFuse's shim includes its headers.
        // Nothing imports it as a module: config/ (its public headers path) holds only build settings.
        .target(
            name: "libfuse", path: "Vendor/libfuse",
            exclude: [
                "AUTHORS", "GPL2.txt", "LGPL2.txt", "LICENSE", "README.md", "README.upstream.md",
                "lib/fuse_versionscript", "include"
            ],
            sources: ["lib"],
            publicHeadersPath: "config",
            cSettings: [
                .headerSearchPath("config"), .headerSearchPath("include"), .headerSearchPath("lib"),
                .define("_GNU_SOURCE"), .define("_REENTRANT"), .define("_FILE_OFFSET_BITS", to: "64"),
                .define("HAVE_LIBFUSE_PRIVATE_CONFIG_H"), .define("FUSE_USE_VERSION", to: "317"),
                .define("FUSERMOUNT_DIR", to: "\"/usr/bin\""),
                .unsafeFlags(["-fno-strict-aliasing", "-w"])
            ],
            linkerSettings: [
                .linkedLibrary("uring"), .linkedLibrary("numa"), .linkedLibrary("pthread"),
                .linkedLibrary("dl"), .linkedLibrary("rt")
            ]),
        .systemLibrary(name: "CFuse"),
        // ThreadSanitizerMutex, which every module that locks uses in ThreadSanitizer builds.
        .target(name: "Locking"),
        .target(
            name: "FuseKit",
            dependencies: [
                "CFuse", "libfuse", "Locking", .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics")
            ]),
        // SHA-256, optimized in every build: the test suite runs a debug build, in which `storefs
        // info` hashes every store it reads, and unoptimized the hash ran at 5–10 MB/s.
        .target(name: "Digest", swiftSettings: [.unsafeFlags(["-O"])]),
        .target(name: "ObjectGraph", dependencies: ["Digest", "Locking"]),
        // SQLite's file format read from the bytes alone (pages, free space, WAL frames), for the
        // records a store's files remember; no SQLite, no stores. Optimized in every build like
        // Digest: it walks every page of a store, and unoptimized it ran at a tenth of the speed.
        .target(name: "SQLiteRecovery", swiftSettings: [.unsafeFlags(["-O"])]),
        // Readers of byte formats kept inside stores' values: DEFLATE and its wrappers, schema-less
        // protobuf, property lists as XML (value renderings; Core Data's Z_MODELCACHE).
        .target(name: "Decoding", dependencies: ["ObjectGraph"]),
        // Core Data's schema without an SQL dialect: layout, history slots, metadata plist (SQLite and PostgreSQL).
        .target(
            name: "CoreDataSchema",
            dependencies: ["ObjectGraph", "Decoding", .product(name: "Logging", package: "swift-log")]),
        // Core Data's relational rules written once over an SQL dialect: reads, the save, integrity
        // repair, to-many differences, history rows, predicates as SQL (SQLite and PostgreSQL).
        .target(
            name: "RelationalCore",
            dependencies: ["ObjectGraph", "CoreDataSchema", .product(name: "Logging", package: "swift-log")]),
        .target(
            name: "SQLiteStore",
            dependencies: [
                "ObjectGraph", "CoreDataSchema", "RelationalCore", "Decoding", "Locking", "SQLiteRecovery",
                .product(name: "GRDB", package: "GRDB.swift"),
                // sqlite3_step and column readers, to decode rows by column index without GRDB's Row.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log")
            ]),
        .systemLibrary(
            name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .target(
            name: "PostgresStore",
            dependencies: [
                "ObjectGraph", "CoreDataSchema", "RelationalCore", "CPostgres", "Locking",
                .product(name: "Logging", package: "swift-log")
            ]),
        .target(name: "AtomicStore", dependencies: ["ObjectGraph", "Locking"]),
        .target(name: "XMLStore", dependencies: ["ObjectGraph", "AtomicStore", "Decoding"]),
        .target(name: "BinaryStore", dependencies: ["ObjectGraph", "AtomicStore", "Decoding"]),
        // What a device holds, read-only: folders, iOS backups (their manifests read from the pages),
        // Core Data stores found by content. No SQL, no FUSE.
        .target(name: "Devices", dependencies: ["ObjectGraph", "SQLiteRecovery", "Digest", "Decoding"]),
        .target(
            name: "StoreFS",
            dependencies: [
                "ObjectGraph", "Decoding", "FuseKit", "Locking", "Devices",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics")
            ]),
        .executableTarget(
            name: "storefs",
            dependencies: [
                "ObjectGraph", "SQLiteStore", "XMLStore", "BinaryStore", "PostgresStore", "StoreFS", "FuseKit",
                "Locking", "Devices",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus")
            ]),
        .executableTarget(name: "fetch-benchmark", dependencies: ["ObjectGraph", "SQLiteStore"]),
        // The benchmarks' FUSE floor: an in-memory tree served through FuseKit (scripts/bench).
        .executableTarget(name: "fuse-floor", dependencies: ["FuseKit"]),
        .target(name: "TestSupport", dependencies: ["ObjectGraph"], path: "Tests/TestSupport"),
        .target(name: "EmbeddedKernel", dependencies: ["FuseKit"], path: "Tests/EmbeddedKernel"),
        .testTarget(name: "ObjectGraphTests", dependencies: ["ObjectGraph", "TestSupport"]),
        .testTarget(name: "FuseKitTests", dependencies: ["FuseKit", "TestSupport"]),
        .testTarget(
            name: "StoreFSTests",
            dependencies: [
                "StoreFS", "EmbeddedKernel", "ObjectGraph", "SQLiteStore", "PostgresStore", "Decoding", "TestSupport",
                "XMLStore", .product(name: "Logging", package: "swift-log")
            ]),
        .testTarget(
            name: "MountTests",
            dependencies: [
                "storefs", "StoreFS", "FuseKit", "ObjectGraph", "SQLiteStore", "XMLStore", "BinaryStore",
                "PostgresStore", "TestSupport",
                .product(name: "Logging", package: "swift-log")
            ]),
        .testTarget(name: "SystemTests", dependencies: ["storefs", "ObjectGraph", "SQLiteStore", "TestSupport"]),
        .testTarget(
            name: "StoreTypeTests",
            dependencies: [
                "ObjectGraph", "AtomicStore", "XMLStore", "BinaryStore", "SQLiteStore", "PostgresStore", "TestSupport"
            ]),
        .testTarget(
            name: "SQLiteStoreTests",
            dependencies: [
                "SQLiteStore", "ObjectGraph", "Decoding", "TestSupport", .product(name: "GRDB", package: "GRDB.swift")
            ]),
        .testTarget(name: "DecodingTests", dependencies: ["Decoding", "ObjectGraph", "TestSupport"]),
        .testTarget(
            name: "SQLiteRecoveryTests",
            dependencies: [
                "SQLiteRecovery", "SQLiteStore", "ObjectGraph", "TestSupport",
                .product(name: "GRDB", package: "GRDB.swift")
            ])
    ],
    swiftLanguageModes: [.v6]
)
