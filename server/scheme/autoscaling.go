package scheme

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/k1s/k1s/internal/apis/autoscaling"
)

// HorizontalPodAutoscalers are one set of objects stored as autoscaling/v2
// and served as autoscaling/v2 and autoscaling/v1; the internal version is
// the autoscaling/v2 type. These conversions translate between the two
// shapes (internal/apis/autoscaling: HPAToV1, HPAToV2), lists item by item.
func addAutoscalingConversions(s *runtime.Scheme) error {
	funcs := []struct {
		a, b any
		fn   conversion.ConversionFunc
	}{
		{(*autoscalingv2.HorizontalPodAutoscaler)(nil), (*autoscalingv1.HorizontalPodAutoscaler)(nil), func(a, b any, _ conversion.Scope) error {
			return autoscaling.HPAToV1(a.(*autoscalingv2.HorizontalPodAutoscaler), b.(*autoscalingv1.HorizontalPodAutoscaler))
		}},
		{(*autoscalingv1.HorizontalPodAutoscaler)(nil), (*autoscalingv2.HorizontalPodAutoscaler)(nil), func(a, b any, _ conversion.Scope) error {
			return autoscaling.HPAToV2(a.(*autoscalingv1.HorizontalPodAutoscaler), b.(*autoscalingv2.HorizontalPodAutoscaler))
		}},
		{(*autoscalingv2.HorizontalPodAutoscalerList)(nil), (*autoscalingv1.HorizontalPodAutoscalerList)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*autoscalingv2.HorizontalPodAutoscalerList), b.(*autoscalingv1.HorizontalPodAutoscalerList)
			out.ListMeta = in.ListMeta
			out.Items = make([]autoscalingv1.HorizontalPodAutoscaler, len(in.Items))
			for i := range in.Items {
				if err := autoscaling.HPAToV1(&in.Items[i], &out.Items[i]); err != nil {
					return err
				}
			}
			return nil
		}},
		{(*autoscalingv1.HorizontalPodAutoscalerList)(nil), (*autoscalingv2.HorizontalPodAutoscalerList)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*autoscalingv1.HorizontalPodAutoscalerList), b.(*autoscalingv2.HorizontalPodAutoscalerList)
			out.ListMeta = in.ListMeta
			out.Items = make([]autoscalingv2.HorizontalPodAutoscaler, len(in.Items))
			for i := range in.Items {
				if err := autoscaling.HPAToV2(&in.Items[i], &out.Items[i]); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	for _, f := range funcs {
		if err := s.AddConversionFunc(f.a, f.b, f.fn); err != nil {
			return err
		}
	}
	return nil
}
