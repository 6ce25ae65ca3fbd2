import Profiles

// The operator's own profiles, saved and deleted through the API: each change is a file in the
// profile directory, read back as every profile is, and a condition in force under a changed
// profile takes its new values as on a reload.

extension Conditioner {
    /// Saves `profile`, given as `yaml` (the text the file will hold, already parsed), in the
    /// profile directory: a new file, or the file of the writable profile of that name when
    /// `replace`. A file that does not load back as written is undone.
    public func saveProfile(_ profile: Profile, yaml: String, replace: Bool, by requester: Requester) throws(ConditionsRefusal) -> SavedProfile {
        try checkRunning()
        guard let directory = profileFiles.directory else { throw ConditionsRefusal(ProfileNotSavedError.noDirectory) }
        let existing = try? catalog.entry(named: profile.name)
        let file: String
        if let existing {
            guard profileFiles.isWritable(existing) else {
                throw ConditionsRefusal(ReadOnlyProfileError(name: existing.profile.name, file: existing.file, directory: directory))
            }
            guard replace else { throw ConditionsRefusal(ProfileExistsError(name: existing.profile.name, file: existing.file)) }
            file = existing.file
        } else {
            file = profileFiles.newFile(for: profile.name, in: directory)
        }
        let previous = existing.flatMap { profileFiles.contents(of: $0.file) }
        try refusing { () throws(ProfileNotSavedError) in try profileFiles.write(yaml, to: file) }
        _ = reload(by: requester)
        guard let saved = catalog.entries.first(where: { $0.file == file }) else {
            let problem = catalog.problems.first { $0.file == file }?.description ?? "another file in \(directory) has the name"
            if let previous {
                try? profileFiles.write(previous, to: file)
            } else {
                try? profileFiles.remove(file)
            }
            _ = reload(by: requester)
            throw ConditionsRefusal(ProfileNotSavedError(file: file, reason: "it did not load back as written (\(problem)); put back as it was"))
        }
        logger.notice("profile '\(saved.profile.name)' \(existing == nil ? "created" : "replaced") in \(file) by \(requester)")
        return SavedProfile(entry: saved, created: existing == nil)
    }

    /// Removes the writable profile `name` names (by name or file name), its file and all.
    /// Conditions in force under it keep its values, as when its file goes away by other means.
    public func deleteProfile(named name: String, by requester: Requester) throws(ConditionsRefusal) -> ProfileEntry {
        try checkRunning()
        let entry = try refusing { () throws(UnknownProfileError) in try catalog.entry(named: name) }
        guard profileFiles.isWritable(entry) else {
            throw ConditionsRefusal(ReadOnlyProfileError(name: entry.profile.name, file: entry.file, directory: profileFiles.directory))
        }
        try refusing { () throws(ProfileNotSavedError) in try profileFiles.remove(entry.file) }
        _ = reload(by: requester)
        logger.notice("profile '\(entry.profile.name)' deleted (\(entry.file)) by \(requester)")
        return entry
    }
}
