import Conditions
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
        let impairments = conditions.impairments
        func given(_ rate: LossRate) -> String? { rate.isZero ? nil : rate.description }
        jitterDistribution = impairments.jitterDistribution == .uniform ? nil : impairments.jitterDistribution.rawValue
        jitterCorrelation = given(impairments.jitterCorrelation)
        keepOrder = impairments.keepsOrder ? true : nil
        lossCorrelation = given(impairments.lossCorrelation)
        burstLoss = impairments.burstLoss.map { BurstLossDocument(average: $0.average.description, length: $0.meanBurstPackets) }
        duplicate = given(impairments.duplicate)
        duplicateCorrelation = given(impairments.duplicateCorrelation)
        corrupt = given(impairments.corrupt)
        corruptCorrelation = given(impairments.corruptCorrelation)
        reorder = given(impairments.reorder)
        reorderCorrelation = given(impairments.reorderCorrelation)
        queue = impairments.queue?.description
        trace = conditions.trace.map {
            TraceDocument(
                name: $0.name, file: $0.file, mean: $0.meanCapacity.roundedToThreeDigits.description,
                peak: $0.peakCapacity.roundedToThreeDigits.description, periodMilliseconds: $0.periodMilliseconds
            )
        }
    }
}

extension ProfileDocument {
    /// `entry` as the API shows it; `files`, for a listed profile, tells whether it may be
    /// replaced or deleted (a condition's profile says nothing of it).
    init(_ entry: ProfileEntry, files: ProfileFiles? = nil) {
        let profile = entry.profile
        self.init(
            name: profile.name,
            description: profile.description,
            file: entry.file,
            downlink: DirectionDocument(profile.downlink),
            uplink: DirectionDocument(profile.uplink),
            dnsDelay: profile.dnsDelay.description,
            failure: profile.failure?.rawValue,
            dnsFailure: profile.dnsFailure?.kind.rawValue,
            dnsFailureNames: profile.dnsFailure.flatMap { $0.names.isEmpty ? nil : $0.names },
            summary: profile.summary,
            readOnly: files.flatMap { $0.isWritable(entry) ? nil : true }
        )
    }
}

extension ProfileSummary {
    init(_ entry: ProfileEntry, files: ProfileFiles) {
        self.init(
            name: entry.profile.name, description: entry.profile.description, file: entry.file, summary: entry.profile.summary,
            readOnly: files.isWritable(entry) ? nil : true
        )
    }
}

extension ProfileProblem {
    init(_ error: ProfileError) {
        self.init(code: error.code.rawValue, file: error.file, line: error.line, field: error.field, message: error.message)
    }
}
