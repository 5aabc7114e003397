package controller

// Finalized feature levels (UpdateFeatures, as kafka-features.sh sends it).
// Every weir node supports the same ranges, so a level is checked against
// SupportedFeatures only. Updates are all applied or none: one invalid
// update fails the others with it. Lowering a level needs a downgrade
// type; metadata.version has a single supported level here. Turning
// eligible leader replicas off clears every partition's ELR and last
// known ELR in the same commit.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// FeatureRange is the levels of a feature this version of weir supports.
type FeatureRange struct{ Min, Max int16 }

// SupportedFeatures are the features weir knows and their levels.
var SupportedFeatures = map[string]FeatureRange{
	"metadata.version":  {Min: 7, Max: MetadataVersion},
	"group.version":     {Min: 0, Max: GroupVersion},
	metadata.ELRFeature: {Min: 0, Max: 1},
}

// UpdateFeatures upgrade types (UpdateFeatures v1+; v0's AllowDowngrade
// maps to safeDowngrade).
const (
	upgrade         int8 = 1
	safeDowngrade   int8 = 2
	unsafeDowngrade int8 = 3
)

// UpdateFeaturesResult is the answer of UpdateFeatures: each update's
// outcome (nil or a *TopicError), in request order.
type UpdateFeaturesResult struct {
	Committed
	Errs []error
}

// UpdateFeatures finalizes new feature levels.
func (c *Controller) UpdateFeatures(req *kmsg.UpdateFeaturesRequest) (UpdateFeaturesResult, error) {
	return run(c, func(img *metadata.Image) (result[UpdateFeaturesResult], error) { return updateFeatures(img, req) })
}

// updateFeatures builds UpdateFeatures. Nothing is to be waited for
// (Offset -1) unless levels change.
func updateFeatures(img *metadata.Image, req *kmsg.UpdateFeaturesRequest) (result[UpdateFeaturesResult], error) {
	res := result[UpdateFeaturesResult]{Answer: UpdateFeaturesResult{Committed{-1}, make([]error, len(req.FeatureUpdates))}}
	errs := res.Answer.Errs
	var recs []metadata.Record
	failed := false
	seen := map[string]bool{}
	for i, u := range req.FeatureUpdates {
		typ := u.UpgradeType
		if req.Version == 0 {
			typ = upgrade
			if u.AllowDowngrade {
				typ = safeDowngrade
			}
		}
		r, known := SupportedFeatures[u.Feature]
		cur := img.Features[u.Feature]
		switch {
		case seen[u.Feature]:
			errs[i] = topicErr(kerr.InvalidRequest, "Feature %s was specified more than once.", u.Feature)
		case !known:
			errs[i] = topicErr(kerr.InvalidUpdateVersion, "Invalid update version %d for feature %s. The controller does not support the given feature.", u.MaxVersionLevel, u.Feature)
		case typ < upgrade || typ > unsafeDowngrade:
			errs[i] = topicErr(kerr.InvalidRequest, "Unknown upgrade type %d for feature %s.", typ, u.Feature)
		case u.MaxVersionLevel < cur && typ == upgrade:
			errs[i] = topicErr(kerr.InvalidUpdateVersion, "Invalid update version %d for feature %s. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.", u.MaxVersionLevel, u.Feature)
		case u.MaxVersionLevel > cur && typ != upgrade:
			errs[i] = topicErr(kerr.InvalidUpdateVersion, "Invalid update version %d for feature %s. Can't downgrade to a newer version.", u.MaxVersionLevel, u.Feature)
		case u.MaxVersionLevel != 0 && (u.MaxVersionLevel < r.Min || u.MaxVersionLevel > r.Max),
			u.Feature == "metadata.version" && u.MaxVersionLevel == 0:
			errs[i] = topicErr(kerr.InvalidUpdateVersion, "Invalid update version %d for feature %s. The controller supports versions %d to %d.", u.MaxVersionLevel, u.Feature, r.Min, r.Max)
		case u.MaxVersionLevel != cur:
			recs = append(recs, &metadata.FeatureLevelRecord{Name: u.Feature, FeatureLevel: u.MaxVersionLevel})
		}
		seen[u.Feature] = true
		failed = failed || errs[i] != nil
	}
	if failed {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = topicErr(kerr.InvalidUpdateVersion, "Not applied: another update in the request is invalid.")
			}
		}
		return res, nil
	}
	if req.ValidateOnly || len(recs) == 0 {
		return res, nil
	}
	after, _, err := img.Apply(recs, img.Offset)
	if err != nil {
		return res, err
	}
	if img.Features[metadata.ELRFeature] >= 1 && after.Features[metadata.ELRFeature] < 1 {
		recs = append(recs, clearELR(after)...)
	}
	res.Records = recs
	return res, nil
}

// clearELR returns the records that empty every partition's ELR and last
// known ELR.
func clearELR(img *metadata.Image) []metadata.Record {
	var recs []metadata.Record
	for _, name := range sortedTopicNames(img) {
		t := img.Topics.Get(name)
		for _, p := range t.SortedPartitions() {
			if len(p.ELR) == 0 && len(p.LastKnownELR) == 0 {
				continue
			}
			rec := metadata.NewPartitionChangeRecord()
			rec.TopicId, rec.PartitionId = t.ID, p.ID
			rec.EligibleLeaderReplicas, rec.LastKnownElr = []int32{}, []int32{}
			recs = append(recs, rec)
		}
	}
	return recs
}
