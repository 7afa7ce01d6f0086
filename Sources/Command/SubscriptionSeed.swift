/// How the feeds a mount command names change the cache's list, so that
/// the same command after an unmount gives the same shows: what was
/// subscribed since is in, what was unsubscribed is out, and a command that
/// names other feeds than the last one replaces those feeds.
///
/// The last command's feeds are the seed. A seed feed missing from the
/// list was unsubscribed (by a command or by hand) and stays out while the
/// command names it; a listed feed that is not in the seed was subscribed
/// and stays; a seed feed the new command no longer names leaves.
enum SubscriptionSeed {
    /// What to take out of `list` and add to it for a mount of
    /// `commandLine`, the last one having been `seed`.
    static func change(
        list: [String], seed: [String], commandLine: [String]
    ) -> (dropped: [String], added: [String]) {
        let (listed, seeded, named) = (Set(list), Set(seed), Set(commandLine))
        let unsubscribed = seeded.subtracting(listed)
        let dropped = list.filter { seeded.contains($0) && !named.contains($0) }
        let added = commandLine.filter { !listed.contains($0) && !unsubscribed.contains($0) }
        return (dropped, added)
    }
}
