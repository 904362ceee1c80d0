// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "storefs",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "storefs", targets: ["storefs"]),
        .library(name: "ObjectGraph", targets: ["ObjectGraph"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // libfuse 3.18.3 from Debian's source package (Vendor/libfuse/README.md): FUSE over io_uring,
        // which Debian 12's libfuse 3.14 lacks. Linked statically; CFuse's shim includes its headers.
        // Nothing imports it as a module: config/ (its public headers path) holds only build settings.
        .target(
            name: "libfuse", path: "Vendor/libfuse",
            exclude: ["AUTHORS", "GPL2.txt", "LGPL2.txt", "LICENSE", "README.md", "README.upstream.md",
                      "lib/fuse_versionscript", "include"],
            sources: ["lib"],
            publicHeadersPath: "config",
            cSettings: [
                .headerSearchPath("config"), .headerSearchPath("include"), .headerSearchPath("lib"),
                .define("_GNU_SOURCE"), .define("_REENTRANT"), .define("_FILE_OFFSET_BITS", to: "64"),
                .define("HAVE_LIBFUSE_PRIVATE_CONFIG_H"), .define("FUSE_USE_VERSION", to: "317"),
                .define("FUSERMOUNT_DIR", to: "\"/usr/bin\""),
                .unsafeFlags(["-fno-strict-aliasing", "-w"]),
            ],
            linkerSettings: [
                .linkedLibrary("uring"), .linkedLibrary("numa"), .linkedLibrary("pthread"),
                .linkedLibrary("dl"), .linkedLibrary("rt"),
            ]),
        .systemLibrary(name: "CFuse"),
        .target(name: "FuseKit", dependencies: ["CFuse", "libfuse", .product(name: "Logging", package: "swift-log")]),
        .target(name: "ObjectGraph", dependencies: [.product(name: "Logging", package: "swift-log")]),
        .target(
            name: "SQLiteStore",
            dependencies: [
                "ObjectGraph", .product(name: "GRDB", package: "GRDB.swift"),
                // sqlite3_step and column readers, to decode rows by column index without GRDB's Row.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .target(name: "AtomicStore", dependencies: ["ObjectGraph"]),
        .target(name: "XMLStore", dependencies: ["ObjectGraph", "AtomicStore", .product(name: "Logging", package: "swift-log")]),
        .target(name: "BinaryStore", dependencies: ["ObjectGraph", "AtomicStore", .product(name: "Logging", package: "swift-log")]),
        .target(
            name: "StoreFS",
            dependencies: ["ObjectGraph", "FuseKit", .product(name: "Logging", package: "swift-log")]),
        .executableTarget(
            name: "storefs",
            dependencies: [
                "ObjectGraph", "SQLiteStore", "XMLStore", "BinaryStore", "StoreFS", "FuseKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .executableTarget(name: "fetch-benchmark", dependencies: ["ObjectGraph", "SQLiteStore"]),
        // The benchmarks' FUSE floor: an in-memory tree served through FuseKit (scripts/bench).
        .executableTarget(name: "fuse-floor", dependencies: ["FuseKit"]),
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .target(name: "EmbeddedKernel", dependencies: ["FuseKit"], path: "Tests/EmbeddedKernel"),
        .testTarget(name: "ObjectGraphTests", dependencies: ["ObjectGraph", "TestSupport"]),
        .testTarget(name: "FuseKitTests", dependencies: ["FuseKit", "TestSupport"]),
        .testTarget(
            name: "StoreFSTests", dependencies: ["StoreFS", "EmbeddedKernel", "ObjectGraph", "SQLiteStore", "TestSupport"]),
        .testTarget(
            name: "MountTests",
            dependencies: [
                "storefs", "StoreFS", "FuseKit", "ObjectGraph", "SQLiteStore", "XMLStore", "BinaryStore", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(name: "SystemTests", dependencies: ["storefs", "ObjectGraph", "SQLiteStore", "TestSupport"]),
        .testTarget(
            name: "StoreTypeTests",
            dependencies: ["ObjectGraph", "AtomicStore", "XMLStore", "BinaryStore", "SQLiteStore", "TestSupport"]),
        .testTarget(
            name: "SQLiteStoreTests",
            dependencies: ["SQLiteStore", "ObjectGraph", "TestSupport", .product(name: "GRDB", package: "GRDB.swift")]),
    ],
    swiftLanguageModes: [.v6]
)
