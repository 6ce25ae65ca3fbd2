// swift-tools-version: 6.1
// A package of your own that tests under linkcond's profiles: its test target depends on
// LinkCondTesting (Swift Testing) and LinkCondXCTest (XCTest). Here linkcond is the checkout two
// levels up; elsewhere, depend on its repository instead:
//   .package(url: "https://github.com/OWNER/linkcond.git", branch: "main")
import PackageDescription

let package = Package(
    name: "PageLoadExample",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "linkcond", path: "../.."),
    ],
    targets: [
        .testTarget(
            name: "PageLoadTests",
            dependencies: [
                .product(name: "LinkCondTesting", package: "linkcond"),
                .product(name: "LinkCondXCTest", package: "linkcond"),
            ]
        ),
    ]
)
