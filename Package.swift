// swift-tools-version: 6.0
import PackageDescription

/// Targets follow the picture in docs/DESIGN.md, "Architecture": each C
/// library is imported by exactly one adapter target, everything else sees
/// Swift types only.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "podfs",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "podfs", targets: ["podfs"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CFuse3", path: "Modules/CFuse3", pkgConfig: "fuse3",
            providers: [.apt(["libfuse3-dev"])]),
        .systemLibrary(
            name: "CCurl", path: "Modules/CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(
            name: "CXML2", path: "Modules/CXML2", pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]),
        .systemLibrary(
            name: "CSQLite", path: "Modules/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CZlib", path: "Modules/CZlib", pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]),
        // Linux file calls Glibc's module map hides (fallocate, SEEK_DATA).
        .systemLibrary(name: "CLinuxFile", path: "Modules/CLinuxFile"),

        .target(name: "Locking", swiftSettings: swiftSettings),
        .target(name: "Feeds", dependencies: ["CXML2"], swiftSettings: swiftSettings),
        .target(
            name: "RangeCache",
            dependencies: ["CSQLite", "CZlib", "CLinuxFile", "Locking", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings),
        .target(
            name: "HTTPClient",
            dependencies: ["CCurl", "Feeds", "Locking", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings),
        .target(
            name: "FUSEBridge",
            dependencies: ["CFuse3", "Locking", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings),
        // The read rules of an episode, pure: a module of their own, so the
        // driver (PodFS) can call their events and read their state but
        // never write a field or call a helper.
        .target(
            name: "ReadRules",
            dependencies: ["Feeds", "RangeCache", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings),
        .target(
            name: "PodFS",
            dependencies: [
                "Feeds", "RangeCache", "ReadRules", "FUSEBridge", "Locking",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),
        // The command: its folder is Sources/Command, so no two folders
        // differ only by case (Sources/PodFS is the filesystem's core).
        .executableTarget(
            name: "podfs",
            dependencies: [
                "PodFS", "ReadRules", "HTTPClient", "FUSEBridge", "Feeds", "RangeCache", "Locking",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Command",
            swiftSettings: swiftSettings,
            plugins: ["BuildCommit"]),
        // Writes the commit podfs is built from for `podfs --version`.
        .plugin(name: "BuildCommit", capability: .buildTool()),

        // What tests need from the machine (root, programs, the feed corpus)
        // and the PODFS_CI=1 switch that fails them when it is missing.
        .target(name: "TestSupport", path: "Tests/TestSupport", swiftSettings: swiftSettings),
        .testTarget(name: "FeedsTests", dependencies: ["Feeds", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(
            name: "RangeCacheTests",
            dependencies: ["RangeCache", .product(name: "Logging", package: "swift-log")],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "HTTPClientTests", dependencies: ["HTTPClient"], swiftSettings: swiftSettings),
        .testTarget(
            name: "PodFSTests",
            dependencies: [
                "PodFS", "ReadRules", "Feeds", "RangeCache", "FUSEBridge", "Locking", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "CommandTests", dependencies: ["podfs", "HTTPClient", "PodFS", "ReadRules", "RangeCache"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "IntegrationTests", dependencies: ["TestSupport"], swiftSettings: swiftSettings),
    ]
)
