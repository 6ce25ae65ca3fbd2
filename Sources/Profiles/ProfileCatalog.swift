extension Profile: CatalogItem {
    public static var kind: String { "profile" }
}

/// Every profile of the profile directories: see `Catalog`.
public typealias ProfileCatalog = Catalog<Profile>
public typealias ProfileEntry = CatalogEntry<Profile>
public typealias UnknownProfileError = UnknownNameError<Profile>

extension CatalogEntry where Item == Profile {
    public var profile: Profile {
        get { item }
        set { item = newValue }
    }

    public init(profile: Profile, file: String, stem: String) {
        self.init(profile, file: file, stem: stem)
    }
}

extension Catalog where Item == Profile {
    /// Loads every profile file of each directory, in order.
    public static func load(from directories: [String]) -> ProfileCatalog {
        load(from: directories) { text, file in
            do throws(ProfileError) {
                return .success(try ProfileParser.parse(yaml: text, file: file, traces: .besideFile))
            } catch {
                return .failure(Problems(errors: [error]))
            }
        }
    }
}
