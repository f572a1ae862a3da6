package io.lockstep.spring;

import java.lang.reflect.Method;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.context.annotation.ConfigurationCondition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * The application declares jobs: a Lockstep YAML ({@code lockstep.config}) or a {@link LockstepJob}
 * method. Without, there is no scheduler (an application that only takes locks does not join the
 * cluster's workers, where its empty config would read as drift).
 */
final class JobsDeclared implements ConfigurationCondition {

    /** At bean registration, when the application's {@code @Bean} methods are known (as {@code @ConditionalOnBean}). */
    @Override
    public ConfigurationPhase getConfigurationPhase() {
        return ConfigurationPhase.REGISTER_BEAN;
    }

    @Override
    public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
        if (context.getEnvironment().containsProperty("lockstep.config")) {
            return true;
        }
        ConfigurableListableBeanFactory beans = context.getBeanFactory();
        if (beans == null) {
            return false;
        }
        for (String name : beans.getBeanDefinitionNames()) {
            Class<?> type = beans.getType(name, false);
            if (type != null && hasJobMethod(ClassUtils.getUserClass(type))) {
                return true;
            }
        }
        return false;
    }

    private static boolean hasJobMethod(Class<?> type) {
        boolean[] found = {false};
        ReflectionUtils.doWithMethods(type, (Method m) -> found[0] = true,
                m -> !found[0] && AnnotatedElementUtils.hasAnnotation(m, LockstepJob.class));
        return found[0];
    }
}
