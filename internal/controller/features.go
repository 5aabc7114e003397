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

// UpdateFeatures finalizes new feature levels. It returns each update's
// outcome (nil or a *TopicError), in request order, and the offset of the
// last record committed (-1 when nothing was).
func (c *Controller) UpdateFeatures(req *kmsg.UpdateFeaturesRequest) ([]error, int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.requireActive(); err != nil {
		return nil, -1, err
	}
	img := c.Image()
	errs := make([]error, len(req.FeatureUpdates))
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
		return errs, -1, nil
	}
	if req.ValidateOnly || len(recs) == 0 {
		return errs, -1, nil
	}
	after, _, err := img.Apply(recs, img.Offset)
	if err != nil {
		return nil, -1, err
	}
	if img.Features[metadata.ELRFeature] >= 1 && after.Features[metadata.ELRFeature] < 1 {
		recs = append(recs, clearELR(after)...)
	}
	last, err := c.commit(recs)
	if err != nil {
		return nil, -1, err
	}
	return errs, last, nil
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
