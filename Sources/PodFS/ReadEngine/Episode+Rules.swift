public import ReadRules

/// The read rules' types under the names the driver and its tests use
/// (`ReadRules`, a module of its own: docs/DESIGN.md, "The read path").
extension Episode {
    public typealias State = EpisodeRules.State
    public typealias FetchProgress = EpisodeRules.FetchProgress
    public typealias HandleState = EpisodeRules.HandleState
    public typealias Waiter = EpisodeRules.Waiter
    public typealias OpenWaiter = EpisodeRules.OpenWaiter
    public typealias EarlyRead = EpisodeRules.EarlyRead
    public typealias Warning = EpisodeRules.Warning
    public typealias Version = EpisodeRules.Version
    public typealias Variant = EpisodeRules.Variant
    public typealias Unsaved = EpisodeRules.Unsaved
    public typealias RetiredVersion = EpisodeRules.RetiredVersion
    public typealias Validation = EpisodeRules.Validation
    public typealias Scratch = EpisodeRules.Scratch
    public typealias OpenAnswer = EpisodeRules.OpenAnswer
    public typealias Token = EpisodeRules.Token
    public typealias ReadRequest = EpisodeRules.ReadRequest
    public typealias OpenRequest = EpisodeRules.OpenRequest
    public typealias SizeRequest = EpisodeRules.SizeRequest
    public typealias ScratchRequest = EpisodeRules.ScratchRequest
    public typealias ReadToken = EpisodeRules.ReadToken
    public typealias OpenToken = EpisodeRules.OpenToken
    public typealias SizeToken = EpisodeRules.SizeToken
    public typealias FileToken = EpisodeRules.FileToken
}

extension EpisodeReader {
    /// Tuning of fetch sizes (`ReadTuning`).
    public typealias Tuning = ReadTuning
}
