import ControlAPI
import Profiles

// Profiles in the API's documents: the same human units as the files.

extension DirectionDocument {
    init(_ conditions: LinkConditions) {
        self.init(
            bandwidth: conditions.bandwidth?.description,
            delay: conditions.delay.description,
            jitter: conditions.jitter.description,
            loss: conditions.loss.description
        )
    }
}

extension ProfileDocument {
    init(_ entry: CatalogEntry) {
        let profile = entry.profile
        self.init(
            name: profile.name,
            description: profile.description,
            file: entry.file,
            downlink: DirectionDocument(profile.downlink),
            uplink: DirectionDocument(profile.uplink),
            dnsDelay: profile.dnsDelay.description,
            summary: profile.summary
        )
    }
}

extension ProfileSummary {
    init(_ entry: CatalogEntry) {
        self.init(name: entry.profile.name, description: entry.profile.description, file: entry.file, summary: entry.profile.summary)
    }
}

extension ProfileProblem {
    init(_ error: ProfileError) {
        self.init(code: error.code.rawValue, file: error.file, line: error.line, field: error.field, message: error.message)
    }
}

extension LinkConditions {
    /// Reads a direction back from its document (the state file stores profiles this way).
    init(_ document: DirectionDocument) throws(UnitParseError) {
        self.init(
            bandwidth: try document.bandwidth.map { text throws(UnitParseError) in try Bandwidth(parsing: text) },
            delay: try Delay(parsing: document.delay),
            jitter: try Delay(parsing: document.jitter),
            loss: try LossRate(parsing: document.loss)
        )
    }
}

extension Profile {
    init(_ document: ProfileDocument) throws(UnitParseError) {
        self.init(
            name: document.name,
            description: document.description,
            downlink: try LinkConditions(document.downlink),
            uplink: try LinkConditions(document.uplink),
            dnsDelay: try Delay(parsing: document.dnsDelay)
        )
    }
}
